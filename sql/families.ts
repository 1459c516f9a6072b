import type { PendingQuery, Row } from 'postgres'
import type { Db } from '../db/client'
import type { FamilyRole } from '../lib/roles'
import { inCallerFamily, type Caller } from './access'
import { readPage, type Page, type PageRequest } from './list'

export interface Family {
  id: number
  name: string
  role: FamilyRole | null
  memberCount: number
  childCount: number
  version: number
  createdAt: Date
}

export interface Member {
  userId: number
  name: string
  email: string
  role: FamilyRole
  joinedAt: Date
}

export async function insertFamily (db: Db, name: string): Promise<{ id: number }> {
  const [row] = await db<{ id: number }[]>`insert into families (name) values (${name}) returning id`
  return row
}

export async function addMember (db: Db, familyId: number, userId: number, role: FamilyRole): Promise<void> {
  await db`insert into family_members (family_id, user_id, role) values (${familyId}, ${userId}, ${role})`
}

export async function familyIdsOf (db: Db, who: Caller): Promise<number[]> {
  const rows = await db<{ familyId: number }[]>`
    select family_id as "familyId" from family_members
    where user_id = ${who.userId} and ${inCallerFamily(db, who, db`family_id`)}
    order by family_id
  `
  return rows.map(row => row.familyId)
}

/** A family as seen by a user: with the user's role there (null when not a member). */
/** The families of a user with the user's role in each, by id. */
export async function membershipsOf (db: Db, who: Caller): Promise<{ id: number, name: string, role: FamilyRole }[]> {
  return await db<{ id: number, name: string, role: FamilyRole }[]>`
    select f.id, f.name, m.role
    from family_members m join families f on f.id = m.family_id
    where m.user_id = ${who.userId} and ${inCallerFamily(db, who, db`m.family_id`)}
    order by f.id
  `
}

export async function findFamily (db: Db, userId: number, familyId: number): Promise<Family | undefined> {
  const [row] = await db<Family[]>`
    select
      f.id, f.name, m.role,
      (select count(*) from family_members x where x.family_id = f.id) as "memberCount",
      (select count(*) from children c where c.family_id = f.id) as "childCount",
      (select k.version from family_clocks k where k.family_id = f.id) as version,
      f.created_at as "createdAt"
    from families f
    left join family_members m on m.family_id = f.id and m.user_id = ${userId}
    where f.id = ${familyId}
  `
  return row
}

export async function listFamiliesOf (db: Db, who: Caller, page: PageRequest): Promise<Page<Family>> {
  const mine = db`m.user_id = ${who.userId} and ${inCallerFamily(db, who, db`m.family_id`)}`
  return await readPage<Family>(db, {
    ...page,
    select: db`
      f.id, f.name, m.role,
      (select count(*) from family_members x where x.family_id = f.id) as "memberCount",
      (select count(*) from children c where c.family_id = f.id) as "childCount",
      (select k.version from family_clocks k where k.family_id = f.id) as version,
      f.created_at as "createdAt"
    `,
    from: db`from family_members m join families f on f.id = m.family_id where ${mine}`,
    order: db`order by f.id`,
    count: db`(select count(*) from family_members m where ${mine})`
  })
}

export async function renameFamily (db: Db, familyId: number, name: string): Promise<void> {
  await db`update families set name = ${name}, updated_at = now() where id = ${familyId}`
}

/** Deletes a family without children; false when it has some. Members and invites go with it. */
export async function deleteEmptyFamily (db: Db, familyId: number): Promise<boolean> {
  await db`select id from families where id = ${familyId} for update`
  const [{ found }] = await db`select exists (select 1 from children where family_id = ${familyId}) as found`
  if (found) return false
  await db`delete from families where id = ${familyId}`
  return true
}

export async function listMembers (db: Db, familyId: number, page: PageRequest): Promise<Page<Member>> {
  return await readPage<Member>(db, {
    ...page,
    select: db`u.id as "userId", u.name, u.email, m.role, m.joined_at as "joinedAt"`,
    from: db`from family_members m join users u on u.id = m.user_id where m.family_id = ${familyId}`,
    order: db`order by u.id`,
    count: db`(select count(*) from family_members where family_id = ${familyId})`
  })
}

/**
 * Locks the family's memberships for the rest of the transaction, so that two
 * changes at once cannot both take away the last owner. Answers the members' roles.
 */
export async function lockMembers (db: Db, familyId: number): Promise<Map<number, FamilyRole>> {
  const rows = await db<{ userId: number, role: FamilyRole }[]>`
    select user_id as "userId", role from family_members where family_id = ${familyId} order by user_id for update
  `
  return new Map(rows.map(row => [row.userId, row.role]))
}

export async function setMemberRole (db: Db, familyId: number, userId: number, role: FamilyRole): Promise<Member> {
  const [row] = await db<Member[]>`
    with changed as (
      update family_members set role = ${role}
      where family_id = ${familyId} and user_id = ${userId}
      returning user_id, role, joined_at
    )
    select u.id as "userId", u.name, u.email, c.role, c.joined_at as "joinedAt"
    from changed c join users u on u.id = c.user_id
  `
  return row
}

/** Whether the user is an owner of the family with an enabled account, of two columns of the query around. */
export function isOwner (db: Db, family: PendingQuery<Row[]>, user: PendingQuery<Row[]>): PendingQuery<Row[]> {
  return db`exists (
    select 1 from family_members o join users u on u.id = o.user_id
    where o.family_id = ${family} and o.user_id = ${user} and o.role = 'owner' and not u.disabled
  )`
}

/**
 * Whether the user is an owner of the family with an enabled account, and
 * stays so until the transaction ends: a demotion, removal, disabling or
 * deletion that comes meanwhile waits for its commit, and one that came
 * first is seen.
 */
export async function lockOwner (db: Db, familyId: number, userId: number): Promise<boolean> {
  const rows = await db`
    select 1 from family_members m join users u on u.id = m.user_id
    where m.family_id = ${familyId} and m.user_id = ${userId} and m.role = 'owner' and not u.disabled
    for share of m, u
  `
  return rows.length > 0
}

export async function removeMember (db: Db, familyId: number, userId: number): Promise<void> {
  await db`delete from family_members where family_id = ${familyId} and user_id = ${userId}`
}

export async function isMember (db: Db, familyId: number, userId: number): Promise<boolean> {
  const [row] = await db`select 1 from family_members where family_id = ${familyId} and user_id = ${userId}`
  return row !== undefined
}

export async function isMemberByEmail (db: Db, familyId: number, email: string): Promise<boolean> {
  const [row] = await db`
    select exists (
      select 1 from family_members m join users u on u.id = m.user_id
      where m.family_id = ${familyId} and lower(u.email) = lower(${email})
    ) as found
  `
  return row.found
}
