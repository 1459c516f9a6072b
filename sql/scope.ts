import type { PendingQuery } from 'postgres'
import type { Db } from '../plugins/db'
import type { FamilyRole } from './sessions'

/** Tables of records that belong to a child. */
export type RecordTable = 'measurements' | 'visits' | 'medical_events' | 'illnesses' | 'attachments'

export interface Resolved {
  familyId: number
  childId: number | null
  childBirth: string | null
  /** The caller's role in the family, or null when not a member. */
  role: FamilyRole | null
}

export type Target = { family: unknown } | { child: unknown } | { record: RecordTable }

/** The query that finds the family of a family, child or record and the caller's role there. */
export function targetQuery (db: Db, userId: number, target: Target, id: number): PendingQuery<Resolved[]> {
  if ('family' in target) {
    return db<Resolved[]>`
      select f.id as "familyId", null::int as "childId", null::date as "childBirth", m.role
      from families f
      left join family_members m on m.family_id = f.id and m.user_id = ${userId}
      where f.id = ${id}
    `
  }
  if ('child' in target) {
    return db<Resolved[]>`
      select c.family_id as "familyId", c.id as "childId", c.date_of_birth as "childBirth", m.role
      from children c
      left join family_members m on m.family_id = c.family_id and m.user_id = ${userId}
      where c.id = ${id}
    `
  }
  return db<Resolved[]>`
    select c.family_id as "familyId", c.id as "childId", c.date_of_birth as "childBirth", m.role
    from ${db(target.record)} r
    join children c on c.id = r.child_id
    left join family_members m on m.family_id = c.family_id and m.user_id = ${userId}
    where r.id = ${id}
  `
}

export async function resolveTarget (db: Db, userId: number, target: Target, id: number): Promise<Resolved | undefined> {
  const [row] = await targetQuery(db, userId, target, id)
  return row
}
