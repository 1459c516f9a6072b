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

type Target = { family: unknown } | { child: unknown } | { record: RecordTable }

/** The family of a family, child or record and the caller's role there, in one query. */
export async function resolveTarget (db: Db, userId: number, target: Target, id: number): Promise<Resolved | undefined> {
  if ('family' in target) {
    const [row] = await db<Resolved[]>`
      select f.id as "familyId", null::int as "childId", null::date as "childBirth", m.role
      from families f
      left join family_members m on m.family_id = f.id and m.user_id = ${userId}
      where f.id = ${id}
    `
    return row
  }
  if ('child' in target) {
    const [row] = await db<Resolved[]>`
      select c.family_id as "familyId", c.id as "childId", c.date_of_birth as "childBirth", m.role
      from children c
      left join family_members m on m.family_id = c.family_id and m.user_id = ${userId}
      where c.id = ${id}
    `
    return row
  }
  const [row] = await db<Resolved[]>`
    select c.family_id as "familyId", c.id as "childId", c.date_of_birth as "childBirth", m.role
    from ${db(target.record)} r
    join children c on c.id = r.child_id
    left join family_members m on m.family_id = c.family_id and m.user_id = ${userId}
    where r.id = ${id}
  `
  return row
}
