import type { PendingQuery, Row } from 'postgres'
import type { Db } from '../db/client'
import { inCallerFamily, type Caller } from './access'
import { KINDS } from '../kinds'
import { childColumns } from '../lib/child-fields'
import type { ChildOf } from '../lib/fhir'
import { avatarUrl } from '../lib/files/names'
import type { StoredNames } from '../io/stored-files'
import { readPage, type Page, type PageRequest } from './list'

type Fragment = PendingQuery<Row[]>

export interface ChildRow extends ChildOf<Date> {
  growthReference: string
  scheduleId: string | null
  version: number
}

export interface ChildFields {
  name: string
  dateOfBirth: string
  sex: string
  gestationalAgeAtBirthWeeks?: number | null
  gestationalAgeAtBirthDays?: number | null
  /** `who` when left out. */
  growthReference?: string
  /** null when left out. */
  scheduleId?: string | null
}

export const childSorts = { name: 'name', dateOfBirth: 'date_of_birth', createdAt: 'created_at' }

const columns = (db: Db): Fragment => db`
  id, family_id as "familyId", name, date_of_birth as "dateOfBirth", sex,
  case when avatar_name is null then null else ${avatarUrl('')}::text || avatar_name end as "avatarUrl",
  gestational_age_weeks as "gestationalAgeAtBirthWeeks", gestational_age_days as "gestationalAgeAtBirthDays",
  growth_reference as "growthReference", schedule_id as "scheduleId", version, created_at as "createdAt", updated_at as "updatedAt"
`

/** The children of the caller's families (those a personal access token may see), or of one of them. */
export async function listChildren (
  db: Db, who: Caller, familyId: number | null, order: Fragment, page: PageRequest
): Promise<Page<ChildRow>> {
  const { userId } = who
  const scope = familyId === null
    ? db`family_id in (select m.family_id from family_members m where m.user_id = ${userId} and ${inCallerFamily(db, who, db`m.family_id`)})`
    : db`family_id = ${familyId}`
  // The number of children is kept by family.
  const count = familyId === null
    ? db`(select coalesce(sum(family_children(m.family_id)), 0)::bigint from family_members m where m.user_id = ${userId} and ${inCallerFamily(db, who, db`m.family_id`)})`
    : db`family_children(${familyId})`
  return await readPage<ChildRow>(db, { ...page, select: columns(db), from: db`from children where ${scope}`, order, count })
}

export async function findChild (db: Db, id: number): Promise<ChildRow | undefined> {
  const [row] = await db<ChildRow[]>`select ${columns(db)} from children where id = ${id}`
  return row
}

export async function insertChild (db: Db, familyId: number, fields: ChildFields): Promise<ChildRow> {
  const [row] = await db<ChildRow[]>`
    insert into children ${db({ family_id: familyId, ...childColumns(fields) })}
    returning ${columns(db)}
  `
  return row
}

/** Replaces a child's fields; with `expectedVersion`, only while it still has it (undefined otherwise). */
export async function replaceChild (db: Db, id: number, fields: ChildFields, expectedVersion: number | null = null): Promise<ChildRow | undefined> {
  const [row] = await db<ChildRow[]>`
    update children
    set ${db(childColumns(fields))}, updated_at = now()
    where id = ${id} ${expectedVersion === null ? db`` : db`and version = ${expectedVersion}`}
    returning ${columns(db)}
  `
  return row
}

/** What the rules of a child's records read of the child besides its date of birth, or undefined when it is gone. */
export async function childFacts (db: Db, id: number): Promise<{ scheduleId: string | null } | undefined> {
  const [row] = await db<Array<{ scheduleId: string | null }>>`select schedule_id as "scheduleId" from children where id = ${id}`
  return row
}

/** Locks a child's row for the rest of the transaction and answers its version, or undefined when it is gone. */
export async function lockChild (db: Db, id: number): Promise<number | undefined> {
  const [row] = await db<{ version: number }[]>`select version from children where id = ${id} for update`
  return row?.version
}

/** The earliest date among the child's records, or null without records. */
export async function earliestRecordDate (db: Db, childId: number): Promise<string | null> {
  const firsts = KINDS.map(kind => {
    const [date] = kind.dates
    if (date !== undefined) return db`(select min(${db(kind.columns[date])}) from ${db(kind.table)} where child_id = ${childId})`
    // A reading's day as it is anywhere: its date at UTC+14, the rule of its creation.
    const at = db(kind.columns[(kind.timestamps ?? [])[0]])
    return db`(select min(((${at} at time zone 'UTC') + interval '14 hours')::date) from ${db(kind.table)} where child_id = ${childId})`
  })
  const list = firsts.slice(1).reduce((all, first) => db`${all}, ${first}`, firsts[0])
  const [row] = await db<{ earliest: string | null }[]>`select least(${list}) as earliest`
  return row.earliest
}

/**
 * Deletes a child with everything of it (its records go by cascade) and
 * answers the names of its stored files, to be removed once the transaction commits.
 */
export async function deleteChild (db: Db, id: number): Promise<StoredNames> {
  // The lock waits for uploads in flight and keeps new ones out, so every file is listed.
  await lockChild(db, id)
  const uploads = await db<{ storedName: string }[]>`select stored_name as "storedName" from attachments where child_id = ${id}`
  const [child] = await db<{ avatarName: string | null }[]>`delete from children where id = ${id} returning avatar_name as "avatarName"`
  return {
    attachments: uploads.map(row => row.storedName),
    avatars: child?.avatarName == null ? [] : [child.avatarName]
  }
}

/**
 * Sets a child's avatar and answers the name of the one it replaces (null when
 * there was none), or undefined when the child is gone. The row is locked, so
 * of two uploads at once each removes the file the other replaced.
 */
export async function replaceAvatar (db: Db, childId: number, name: string, sizeBytes: number): Promise<{ previous: string | null } | undefined> {
  const [row] = await db<{ previous: string | null }[]>`
    update children c
    set avatar_name = ${name}, avatar_size_bytes = ${sizeBytes}, updated_at = now()
    from (select id, avatar_name from children where id = ${childId} for update) old
    where c.id = old.id
    returning old.avatar_name as previous
  `
  return row
}

/** Clears a child's avatar and answers the name of its file, or null when it had none. */
export async function removeAvatar (db: Db, childId: number): Promise<string | null> {
  const [row] = await db<{ previous: string }[]>`
    update children c
    set avatar_name = null, avatar_size_bytes = null, updated_at = now()
    from (select id, avatar_name from children where id = ${childId} for update) old
    where c.id = old.id and old.avatar_name is not null
    returning old.avatar_name as previous
  `
  return row?.previous ?? null
}

/** Which of these avatar names still belong to a child. */
export async function avatarNamesInUse (db: Db, names: string[]): Promise<Set<string>> {
  const rows = await db<{ name: string }[]>`select avatar_name as name from children where avatar_name in ${db(names)}`
  return new Set(rows.map(row => row.name))
}
