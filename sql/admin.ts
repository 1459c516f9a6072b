import type postgres from 'postgres'
import type { Db } from '../db/client'
import { LOCKS, lockForTransaction } from '../db/locks'
import type { Family, Member } from './families'
import type { FamilyRole, Role } from '../lib/roles'
import { KINDS, type RecordKey } from '../kinds'
import type { User } from './users'
import { readPage } from './list'

/** Queries of the administration routes. */

/** The service's counts: its users, families and children, every kind of record under its export key, and files. */
export type Stats = Record<RecordKey, number> & {
  users: number
  admins: number
  families: number
  children: number
  attachments: number
  storageBytes: number
  activeSessions: number
}

export interface AdminUser extends User {
  disabled: boolean
  lastLoginAt: Date | null
  familyCount: number
}

export interface SortKey<F extends string> {
  field: F
  descending: boolean
}

export type UserSortField = 'createdAt' | 'name' | 'email'
export type FamilySortField = 'id' | 'name' | 'createdAt'

export interface ListOptions<F extends string> {
  q?: string
  sort: Array<SortKey<F>>
  limit: number
  offset: number
}

/** Delta rows of the counts beyond which a reader folds them into one row a table. */
const FOLD_AT = 1000

/** The active sessions of sign-ins, personal access tokens left out: read from the index sessions_active_idx alone. */
export function activeSessionCount (db: Db): postgres.PendingQuery<postgres.Row[]> {
  return db`select count(*) from sessions where revoked_at is null and expires_at > now() and token_hash is null`
}

/**
 * Every count in one round trip: the tables' sizes from their kept counts
 * (migrations/20261124-150000-row-counts.sql), so the cost does not grow with
 * the data; the admins and active sessions through indexes of their own.
 * Each kind of record is counted by its table, under its export key.
 */
export async function getStats (db: Db): Promise<Stats> {
  const [row] = await db<Array<{ sizes: Record<string, number>, bytes: number, admins: number, activeSessions: number, deltas: number }>>`
    with kept as (
      select table_name, sum(delta_rows) as n, sum(delta_bytes) as bytes, count(*) as deltas
      from row_counts group by table_name
    )
    select
      coalesce((select jsonb_object_agg(table_name, n) from kept), '{}') as sizes,
      coalesce((select sum(bytes) from kept where table_name in ('attachments', 'children')), 0) as bytes,
      (select count(*) from users where role = 'admin') as admins,
      (${activeSessionCount(db)}) as "activeSessions",
      coalesce((select sum(deltas) from kept), 0) as deltas
  `
  const size = (table: string): number => Number(row.sizes[table] ?? 0)
  const kinds = Object.fromEntries(KINDS.map(kind => [kind.key, size(kind.table)])) as Record<RecordKey, number>
  if (row.deltas > FOLD_AT) await foldCounts(db)
  return {
    users: size('users'),
    admins: row.admins,
    families: size('families'),
    children: size('children'),
    ...kinds,
    attachments: size('attachments'),
    storageBytes: row.bytes,
    activeSessions: row.activeSessions
  }
}

/**
 * Folds the count deltas into one row a table. Rows written meanwhile are not
 * seen and stay; a second fold at the same time finds the rows gone and
 * folds nothing.
 */
export async function foldCounts (db: Db): Promise<void> {
  await db`
    with gone as (delete from row_counts returning table_name, delta_rows, delta_bytes)
    insert into row_counts (table_name, delta_rows, delta_bytes)
    select table_name, sum(delta_rows), sum(delta_bytes) from gone group by table_name
  `
}

/** A LIKE pattern that finds `q` anywhere, its own wildcards taken literally. */
function containing (q: string): string {
  return '%' + q.replace(/[\\%_]/g, '\\$&') + '%'
}

/** An ORDER BY of parsed sort keys over their columns' expressions, ties broken by id. */
function orderByKeys<F extends string> (db: Db, sort: Array<SortKey<F>>, columns: Record<F, postgres.Fragment>): postgres.Fragment {
  const keys = sort.map(key => key.descending ? db`${columns[key.field]} desc` : db`${columns[key.field]} asc`)
  return [...keys, db`id asc`].reduce((list, key) => db`${list}, ${key}`)
}

function adminUserColumns (db: Db) {
  return db`
    u.id, u.email, u.name, u.role, u.created_at as "createdAt", u.disabled, u.last_login_at as "lastLoginAt",
    (select count(*) from family_members m where m.user_id = u.id) as "familyCount"
  `
}

export async function findAdminUser (db: Db, id: number): Promise<AdminUser | undefined> {
  const [row] = await db<AdminUser[]>`select ${adminUserColumns(db)} from users u where u.id = ${id}`
  return row
}

export async function listAdminUsers (db: Db, options: ListOptions<UserSortField>): Promise<{ rows: AdminUser[], total: number }> {
  const where = options.q === undefined
    ? db``
    : db`where u.name ilike ${containing(options.q)} escape '\\' or u.email ilike ${containing(options.q)} escape '\\'`
  const order = orderByKeys(db, options.sort, {
    createdAt: db`u.created_at`,
    name: db`lower(u.name)`,
    email: db`lower(u.email)`
  })
  const { limit, offset } = options
  return await readPage<AdminUser>(db, { select: adminUserColumns(db), from: db`from users u ${where}`, order: db`order by ${order}`, limit, offset })
}

export async function updateUserAccount (
  db: Db,
  id: number,
  changes: { name?: string, email?: string, role?: Role, disabled?: boolean }
): Promise<void> {
  await db`
    update users set
      name = coalesce(${changes.name ?? null}, name),
      email = coalesce(${changes.email ?? null}, email),
      role = coalesce(${changes.role ?? null}, role),
      disabled = coalesce(${changes.disabled ?? null}::boolean, disabled),
      updated_at = now()
    where id = ${id}
  `
}

/**
 * Takes the admins lock for the rest of the transaction and locks the user's
 * row; answers the user's role and state, or undefined when there is no such user.
 */
export async function lockAccount (db: Db, id: number): Promise<{ role: Role, disabled: boolean } | undefined> {
  await lockForTransaction(db, LOCKS.admins)
  const [row] = await db<{ role: Role, disabled: boolean }[]>`select role, disabled from users where id = ${id} for update`
  return row
}

/** Admins that can still act (not disabled), the given user left out. */
export async function otherActiveAdmins (db: Db, userId: number): Promise<number> {
  const [row] = await db`select count(*) as n from users where role = 'admin' and not disabled and id <> ${userId}`
  return row.n
}

export async function deleteUser (db: Db, id: number): Promise<void> {
  await db`delete from users where id = ${id}`
}

export interface Membership {
  familyId: number
  role: FamilyRole
  members: number
  owners: number
}

/**
 * Locks the families a user belongs to (nobody joins or leaves them until the
 * transaction ends) and answers the user's role and the head counts in each.
 */
export async function lockMembershipsOf (db: Db, userId: number): Promise<Membership[]> {
  await db`
    select f.id from families f
    where f.id in (select family_id from family_members where user_id = ${userId})
    order by f.id
    for update
  `
  return db<Membership[]>`
    select
      m.family_id as "familyId", m.role,
      (select count(*) from family_members x where x.family_id = m.family_id) as members,
      (select count(*) from family_members x where x.family_id = m.family_id and x.role = 'owner') as owners
    from family_members m
    where m.user_id = ${userId}
    order by m.family_id
  `
}

/** Locks a family's row: no member joins it and it is not deleted until the transaction ends. */
export async function lockFamily (db: Db, familyId: number): Promise<boolean> {
  const rows = await db`select id from families where id = ${familyId} for update`
  return rows.length > 0
}

/**
 * Deletes a family with its children (their records and attachments go by
 * cascade), members and invites. The children are locked first, so that no
 * attachment or avatar can be added meanwhile; answers the stored names of
 * their files, for removal after the commit, or undefined when there is no such family.
 */
export async function deleteFamilyWithContents (db: Db, familyId: number): Promise<{ attachments: string[], avatars: string[] } | undefined> {
  if (!(await lockFamily(db, familyId))) return undefined
  const children = await db<{ avatarName: string | null }[]>`
    select avatar_name as "avatarName" from children where family_id = ${familyId} order by id for update
  `
  const attachments = await db<{ storedName: string }[]>`
    select a.stored_name as "storedName"
    from attachments a join children c on c.id = a.child_id
    where c.family_id = ${familyId}
  `
  await db`delete from children where family_id = ${familyId}`
  await db`delete from families where id = ${familyId}`
  return {
    attachments: attachments.map(row => row.storedName),
    avatars: children.flatMap(row => row.avatarName === null ? [] : [row.avatarName])
  }
}

function familyColumns (db: Db, viewerId: number) {
  return db`
    f.id, f.name,
    (select role from family_members v where v.family_id = f.id and v.user_id = ${viewerId}) as role,
    (select count(*) from family_members x where x.family_id = f.id) as "memberCount",
    (select count(*) from children c where c.family_id = f.id) as "childCount",
    (select k.version from family_clocks k where k.family_id = f.id) as version,
    f.created_at as "createdAt"
  `
}

/** Every family, as the given admin sees it: with the admin's role, null where not a member. */
export async function listAllFamilies (db: Db, viewerId: number, options: ListOptions<FamilySortField>): Promise<{ rows: Family[], total: number }> {
  const where = options.q === undefined ? db`` : db`where f.name ilike ${containing(options.q)} escape '\\'`
  const order = orderByKeys(db, options.sort, {
    id: db`f.id`,
    name: db`lower(f.name)`,
    createdAt: db`f.created_at`
  })
  const { limit, offset } = options
  return await readPage<Family>(db, { select: familyColumns(db, viewerId), from: db`from families f ${where}`, order: db`order by ${order}`, limit, offset })
}

export async function familyMembers (db: Db, familyId: number): Promise<Member[]> {
  return db<Member[]>`
    select u.id as "userId", u.name, u.email, m.role, m.joined_at as "joinedAt"
    from family_members m
    join users u on u.id = m.user_id
    where m.family_id = ${familyId}
    order by u.id
  `
}

/** Adds a member; false when the user already is one. */
export async function insertMember (db: Db, familyId: number, userId: number, role: FamilyRole): Promise<boolean> {
  const rows = await db`
    insert into family_members (family_id, user_id, role) values (${familyId}, ${userId}, ${role})
    on conflict do nothing
    returning user_id
  `
  return rows.length > 0
}

export async function findMember (db: Db, familyId: number, userId: number): Promise<Member | undefined> {
  const [row] = await db<Member[]>`
    select u.id as "userId", u.name, u.email, m.role, m.joined_at as "joinedAt"
    from family_members m
    join users u on u.id = m.user_id
    where m.family_id = ${familyId} and m.user_id = ${userId}
  `
  return row
}
