/**
 * The queries of access: the family of a family, child or record a request
 * targets with the caller's role there, and who the request acts for.
 */
import type { PendingQuery, Row } from 'postgres'
import type { Db } from '../db/client'
import type { ChangeKind, RecordTable } from '../kinds/changes'
import type { FamilyRole } from '../lib/roles'

type Fragment = PendingQuery<Row[]>

export interface Resolved {
  familyId: number
  childId: number | null
  childBirth: string | null
  /** The caller's role in the family, or null when not a member. */
  role: FamilyRole | null
  /** The target's own version; null for a target that has none (the history of an item). */
  version: number | null
  /** The clock asked for, `<epoch>.<number of changes>`: of the child's changes or of the family's. */
  clock: string | null
}

export type TargetKind = { family: unknown } | { child: unknown } | { record: RecordTable } | { history: ChangeKind } | { share: unknown }

/**
 * Whom the family checks are for: a user, or a user's personal access token
 * bound to one family, whose caller is a member of no other. (A read token's
 * writes are refused before any family is looked up: plugins/token-rules.ts.)
 */
export interface Caller {
  userId: number
  familyId: number | null
}

/** A family column limited to the caller's token family, when it has one. */
export function inCallerFamily (db: Db, caller: Caller, column: Fragment): Fragment {
  return caller.familyId === null ? db`true` : db`${column} = ${caller.familyId}`
}

/** The join of the caller's membership `m` of a family. */
function membership (db: Db, caller: Caller, family: Fragment): Fragment {
  return db`m.family_id = ${family} and m.user_id = ${caller.userId} and ${inCallerFamily(db, caller, db`m.family_id`)}`
}

/** Which clock a read's ETag is made from: the child's (its changes and its records') or the family's. */
export type ClockOf = 'child' | 'family' | null

function clockOf (db: Db, clock: ClockOf, family: Fragment, child: Fragment): Fragment {
  if (clock === 'family') {
    return db`(select k.epoch || '.' || family_changes(k.family_id) from family_clocks k where k.family_id = ${family})`
  }
  if (clock === 'child') {
    return db`((select k.epoch from family_clocks k where k.family_id = ${family}) || '.' || child_changes(${child}))`
  }
  return db`null::text`
}

/**
 * The query that finds the family of a family, child, record or the history
 * of an item, the caller's role there, the target's version and, when asked,
 * a clock for the read's ETag. The history of an item is found through its
 * last change, so that it stays readable after the item is deleted.
 */
export function targetQuery (db: Db, caller: Caller, target: TargetKind, id: number, clock: ClockOf = null): PendingQuery<Resolved[]> {
  if ('family' in target) {
    return db<Resolved[]>`
      select f.id as "familyId", null::int as "childId", null::date as "childBirth", m.role,
             (select k.version from family_clocks k where k.family_id = f.id) as version,
             ${clockOf(db, clock, db`f.id`, db`null::int`)} as clock
      from families f
      left join family_members m on ${membership(db, caller, db`f.id`)}
      where f.id = ${id}
    `
  }
  if ('child' in target) {
    return throughChild(db, caller, clock, db`c.version`, db`from children c`, db`c.id = ${id}`)
  }
  if ('share' in target) {
    // A share link of a child: not a record, it has no version.
    return throughChild(db, caller, clock, db`null::int`, db`from shares s join children c on c.id = s.child_id`, db`s.id = ${id}`)
  }
  if ('history' in target) {
    return db<Resolved[]>`
      select x.family_id as "familyId", x.child_id as "childId", c.date_of_birth as "childBirth", m.role, null::int as version,
             ${clockOf(db, clock, db`x.family_id`, db`x.child_id`)} as clock
      from (
        select family_id, child_id from changes
        where kind = ${target.history} and record_id = ${id}
        order by seq desc
        limit 1
      ) x
      left join children c on c.id = x.child_id
      left join family_members m on ${membership(db, caller, db`x.family_id`)}
    `
  }
  return throughChild(db, caller, clock, db`r.version`, db`from ${db(target.record)} r join children c on c.id = r.child_id`, db`r.id = ${id}`)
}

/**
 * A target found through its child `c`, which `from` joins: the child's
 * family and date of birth, the caller's role there and the target's
 * version; `where` picks the target.
 */
function throughChild (db: Db, caller: Caller, clock: ClockOf, version: Fragment, from: Fragment, where: Fragment): PendingQuery<Resolved[]> {
  return db<Resolved[]>`
    select c.family_id as "familyId", c.id as "childId", c.date_of_birth as "childBirth", m.role, ${version} as version,
           ${clockOf(db, clock, db`c.family_id`, db`c.id`)} as clock
    ${from}
    left join family_members m on ${membership(db, caller, db`c.family_id`)}
    where ${where}
  `
}

export async function resolveTarget (db: Db, caller: Caller, target: TargetKind, id: number, clock: ClockOf = null): Promise<Resolved | undefined> {
  const [row] = await targetQuery(db, caller, target, id, clock)
  return row
}

/** Who a request acts for: read on every request, so that changes take effect at once. */
export interface Principal {
  id: number
  role: 'admin' | 'user'
  disabled: boolean
  sessionActive: boolean
  /** The route's target, when one was asked for: its family and the caller's role, or null when it does not exist. */
  target: Resolved | null
}

/**
 * The user and session of an access token; with
 * `target`, the family scope's lookup rides along in the same statement.
 */
export async function findPrincipal (db: Db, userId: number, sessionId: number, target: PendingQuery<Resolved[]> | null = null): Promise<Principal | undefined> {
  const lookup = target === null
    ? db`null::json as target`
    : db`(select row_to_json(t) from (${target}) t) as target`
  const [row] = await db<Principal[]>`
    select
      u.id, u.role, u.disabled,
      s.revoked_at is null and s.expires_at > now() as "sessionActive",
      ${lookup}
    from sessions s
    join users u on u.id = s.user_id
    where s.id = ${sessionId} and s.user_id = ${userId}
  `
  return row
}

/** What one statement found of the caller and the child, and what it wrote when both allowed it. */
export interface CheckedCreate {
  principal: { role: 'admin' | 'user', disabled: boolean, sessionActive: boolean } | null
  target: { familyId: number, childBirth: string, role: FamilyRole | null } | null
  /** The visit the body links to is one of the child's, or there is none. */
  visitOk: boolean
  /** The date of the child's visit the body links to, or null. */
  visitDate: string | null
  /** The row as the table holds it, or null when nothing was written. */
  created: Record<string, unknown> | null
}

export interface CreateChecks {
  caller: Caller
  sessionId: number
  childId: number
  /** The record's dates: none may be before the child's date of birth. */
  dates: string[]
  visitId: number | null
  /** The record's own date, which a linked visit may not be after (null: no such rule). */
  visitBy: string | null
  /** The rules decided without the database hold. */
  rulesOk: boolean
  /** The family roles that may write: the route's least role and those above it. */
  roles: FamilyRole[]
  /** The only family the child may belong to (a batch's), or null for any. */
  family: number | null
}

/**
 * A plain create of a child's record in one round trip: the session, the
 * family scope, the rules that need the database, the writing user and the
 * family's clock, and the insert with its change, in one statement. The row
 * is written only when everything allows it; the caller reads why not from
 * what the statement found. `insert` writes from the CTE `actor`, which holds
 * a row only then.
 */
export async function createChecked (db: Db, checks: CreateChecks, insert: (actor: Fragment) => Fragment): Promise<CheckedCreate> {
  const { caller, sessionId, childId, visitId } = checks
  const userId = caller.userId
  const [row] = await db<CheckedCreate[]>`
    with principal as (
      select u.role, u.disabled, s.revoked_at is null and s.expires_at > now() as "sessionActive"
      from sessions s
      join users u on u.id = s.user_id
      where s.id = ${sessionId} and s.user_id = ${userId}
    ),
    target as (
      select c.family_id as "familyId", c.date_of_birth as "childBirth", m.role
      from children c
      left join family_members m on ${membership(db, caller, db`c.family_id`)}
      where c.id = ${childId}
    ),
    -- The linked visit is share-locked: its date cannot move past the
    -- record's date (a visit's write checks its linked records) until this commits.
    linked as (
      select v.date from visits v where v.id = ${visitId}::integer and v.child_id = ${childId} for share
    ),
    link as (
      select ${visitId}::integer is null or exists (select 1 from linked) as ok, (select date from linked) as "visitDate"
    ),
    actor as materialized (
      select t."familyId", begin_change(t."familyId", ${userId})
      from principal p, target t, link l
      where p."sessionActive" and not p.disabled and t.role::text = any(${checks.roles}::text[])
        and (${checks.family}::integer is null or t."familyId" = ${checks.family}::integer)
        and l.ok and (l."visitDate" is null or ${checks.visitBy}::date is null or l."visitDate" <= ${checks.visitBy}::date)
        and ${checks.rulesOk}::boolean and t."childBirth" <= all(${checks.dates}::date[])
    ),
    created as (
      ${insert(db`actor`)}
    )
    select
      (select row_to_json(p) from principal p) as principal,
      (select row_to_json(t) from target t) as target,
      (select ok from link) as "visitOk",
      (select "visitDate" from link) as "visitDate",
      (select row_to_json(c) from created c) as created
  `
  return row
}

/** What one statement found of the caller and the read's target, and the answer the database wrote. */
export interface CheckedRead {
  role: 'admin' | 'user'
  disabled: boolean
  sessionActive: boolean
  target: Resolved | null
  /** The answer, when the caller may read it: the bytes the database sent. */
  body: Buffer | null
}

/** A boolean as PostgreSQL writes it in text. */
const isTrue = (value: Buffer | null): boolean => value !== null && value[0] === 0x74

/**
 * A read decided and answered in one statement: the session, the target and
 * the caller's role there, the clock of what the read shows, and, when the
 * caller may read it, the answer itself. For a read with no answer held, by
 * this instance or by the client.
 */
export async function readChecked (
  db: Db, who: { caller: Caller, sessionId: number }, target: TargetKind, id: number, clock: ClockOf, body: Fragment
): Promise<CheckedRead | undefined> {
  // Read raw: the answer, tens of kilobytes, stays the bytes the database
  // sent, outside the JavaScript heap, from the socket to the client and the
  // cache of answers. Decoded to a string, the answers in flight outlived the
  // young generation and were copied to the old one: under 32 connections of
  // cache misses, about half the scavenges.
  const [row] = await db`
    select
      u.role, u.disabled, s.revoked_at is null and s.expires_at > now() as "sessionActive",
      case when t."familyId" is null then null else row_to_json(t) end as target,
      case
        when s.revoked_at is null and s.expires_at > now() and not u.disabled and t.role is not null
        then ${body}
      end as body
    from sessions s
    join users u on u.id = s.user_id
    left join lateral (${targetQuery(db, who.caller, target, id, clock)} offset 0) t on true
    where s.id = ${who.sessionId} and s.user_id = ${who.caller.userId}
  `.raw()
  if (row === undefined) return undefined
  const [role, disabled, sessionActive, found, answer] = row as unknown as Array<Buffer | null>
  return {
    role: String(role) as CheckedRead['role'],
    disabled: isTrue(disabled),
    sessionActive: isTrue(sessionActive),
    target: found === null ? null : JSON.parse(found.toString()) as Resolved,
    // A copy: the bytes are a part of the buffer the connection reads into.
    body: answer === null ? null : Buffer.from(answer)
  }
}
