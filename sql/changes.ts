import type { Db } from '../db/client'
import { inCallerFamily, type Caller } from './access'
import type { ChangeKind, Position, StoredChange } from '../kinds/changes'
import { pageWithTotal, type Page, type PageRequest } from './list'

/**
 * Starts a write of the service: names the user its changes are recorded
 * for. Writers of a family's records take no lock of the family: they never
 * wait for one another.
 */
export async function beginChange (db: Db, _familyId: number | null, userId: number | null): Promise<void> {
  await db`select begin_change(null::integer, ${userId}::integer)`
}

/**
 * Starts a write of the family itself (its name, members, roles, children):
 * names the user and takes the family's clock before any row, so that these
 * writers lock in one order and the family's version moves by one each time.
 */
export async function beginFamilyChange (db: Db, familyId: number | null, userId: number | null): Promise<void> {
  await db`select begin_family_change(${familyId}::integer, ${userId}::integer)`
}

/** The epoch of a family's data and the family's version. */
export interface Clock {
  epoch: string
  version: number
}

export async function familyClock (db: Db, familyId: number): Promise<Clock | undefined> {
  const [row] = await db<Clock[]>`select epoch, version from family_clocks where family_id = ${familyId}`
  return row
}

/**
 * The changes that can be read in order: those of transactions older than
 * the oldest one still running. Every transaction before that point has
 * ended, so no change can later appear before one of these.
 */
const readable = (db: Db) => db`xid < pg_snapshot_xmin(pg_current_snapshot())`

/** For each family that still exists: its epoch, and the last change that can be read in order (0.0 when none). */
export async function familyPositions (db: Db, familyIds: number[]): Promise<Array<Position & { familyId: number, epoch: string }>> {
  return db<Array<Position & { familyId: number, epoch: string }>>`
    select k.family_id as "familyId", k.epoch, coalesce(l.xid, 0) as xid, coalesce(l.seq, 0) as seq
    from family_clocks k
    left join lateral (
      select xid::text::int8 as xid, seq from changes
      where family_id = k.family_id and ${readable(db)}
      order by xid desc, seq desc
      limit 1
    ) l on true
    where k.family_id in ${db(familyIds)}
  `
}

/** Whether a family has committed changes that cannot be read in order yet: an older transaction is still running. */
export async function changesHeldBack (db: Db, familyId: number): Promise<boolean> {
  const [row] = await db<{ held: boolean }[]>`
    select exists (
      select 1 from changes where family_id = ${familyId} and xid >= pg_snapshot_xmin(pg_current_snapshot())
    ) as held
  `
  return row.held
}

/**
 * The clocks of every family of a user (those a personal access token may
 * see), as one string: it moves when anything in them or the memberships change.
 */
export async function membershipClock (db: Db, who: Caller): Promise<string> {
  const [row] = await db<{ clock: string }[]>`
    select coalesce(string_agg(k.family_id || ':' || k.epoch || '.' || family_changes(k.family_id), ',' order by k.family_id), '') as clock
    from family_members m
    join family_clocks k on k.family_id = m.family_id
    where m.user_id = ${who.userId} and ${inCallerFamily(db, who, db`m.family_id`)}
  `
  return row.clock
}

const changeColumns = (db: Db) => db`
  family_id as "familyId", xid::text::int8 as xid, seq, kind, record_id as "recordId", child_id as "childId",
  op, version, user_id as "userId", at, record
`

/** A family's changes after a position that can be read in order, oldest first. */
export async function changesAfter (db: Db, familyId: number, after: Position, limit: number): Promise<StoredChange[]> {
  return db<StoredChange[]>`
    select ${changeColumns(db)}
    from changes
    where family_id = ${familyId}
      and (family_id, xid, seq) > (${familyId}::integer, ${String(after.xid)}::xid8, ${after.seq}::bigint)
      and ${readable(db)}
    order by xid, seq
    limit ${limit}
  `
}

export interface HistoryEntry extends StoredChange {
  /** The record as the change before this one left it. */
  previous: Record<string, unknown> | null
  userName: string | null
}

/** The changes of one item, newest first, each with the record as it was before. */
export async function historyOf (
  db: Db, kind: ChangeKind, recordId: number, { limit, offset }: PageRequest
): Promise<Page<HistoryEntry>> {
  const count = db`(select count(*) from changes where kind = ${kind} and record_id = ${recordId})`
  const rows = await db<(HistoryEntry & { total: number })[]>`
    select e.*, u.name as "userName", ${count} as total
    from (
      select ${changeColumns(db)},
        (select p.record from changes p where p.kind = c.kind and p.record_id = c.record_id and p.seq < c.seq order by p.seq desc limit 1) as previous
      from changes c
      where c.kind = ${kind} and c.record_id = ${recordId}
      order by c.seq desc
      limit ${limit} offset ${offset}
    ) e
    left join users u on u.id = e."userId"
    order by e.seq desc
  `
  return await pageWithTotal<HistoryEntry>(db, rows, offset, count)
}
