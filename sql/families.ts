import type { Db } from '../plugins/db'
import type { FamilyRole } from './sessions'

export async function insertFamily (db: Db, name: string): Promise<{ id: number }> {
  const [row] = await db<{ id: number }[]>`insert into families (name) values (${name}) returning id`
  return row
}

export async function addMember (db: Db, familyId: number, userId: number, role: FamilyRole): Promise<void> {
  await db`insert into family_members (family_id, user_id, role) values (${familyId}, ${userId}, ${role})`
}

export async function familyIdsOf (db: Db, userId: number): Promise<number[]> {
  const rows = await db<{ familyId: number }[]>`
    select family_id as "familyId" from family_members where user_id = ${userId} order by family_id
  `
  return rows.map(row => row.familyId)
}
