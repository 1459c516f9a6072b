import type { Db } from '../db/client'
import type { StoredChange } from '../lib/changes'
import type { ChangeKind } from '../lib/kinds'

/**
 * Starts a write of the service: names the user its changes are recorded for
 * and takes the family's clock before any row, so that the family's writers
 * lock in one order. Runs first in the writing transaction; without a family
 * (a new one, or several) it only names the user.
 */
export async function beginChange (db: Db, familyId: number | null, userId: number | null): Promise<void> {
  await db`select begin_change(${familyId}::integer, ${userId}::integer)`
}

/** Where a family's changes stand: the last sequence number, the epoch of its data, the family's version. */
export interface Clock {
  seq: number
  epoch: string
  version: number
}

export async function familyClock (db: Db, familyId: number): Promise<Clock | undefined> {
  const [row] = await db<Clock[]>`select seq, epoch, version from family_clocks where family_id = ${familyId}`
  return row
}

/** The clocks of some families, those that still exist. */
export async function familyClocks (db: Db, familyIds: number[]): Promise<Array<Clock & { familyId: number }>> {
  return db<Array<Clock & { familyId: number }>>`
    select family_id as "familyId", seq, epoch, version from family_clocks where family_id in ${db(familyIds)}
  `
}

/** The clocks of every family of a user, as one string: it moves when anything in them or the memberships change. */
export async function membershipClock (db: Db, userId: number): Promise<string> {
  const [row] = await db<{ clock: string }[]>`
    select coalesce(string_agg(k.family_id || ':' || k.epoch || '.' || k.seq, ',' order by k.family_id), '') as clock
    from family_members m
    join family_clocks k on k.family_id = m.family_id
    where m.user_id = ${userId}
  `
  return row.clock
}

const changeColumns = (db: Db) => db`
  family_id as "familyId", seq, kind, record_id as "recordId", child_id as "childId",
  op, version, user_id as "userId", at, record
`

/** A family's changes after a sequence number, oldest first. */
export async function changesAfter (db: Db, familyId: number, afterSeq: number, limit: number): Promise<StoredChange[]> {
  return db<StoredChange[]>`
    select ${changeColumns(db)}
    from changes
    where family_id = ${familyId} and seq > ${afterSeq}
    order by seq
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
  db: Db, kind: ChangeKind, recordId: number, limit: number, offset: number
): Promise<{ rows: HistoryEntry[], total: number }> {
  const rows = await db<(HistoryEntry & { total: number })[]>`
    select e.*, u.name as "userName",
      (select count(*) from changes where kind = ${kind} and record_id = ${recordId}) as total
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
  let total = rows[0]?.total
  if (total === undefined) {
    const [row] = await db<{ n: number }[]>`select count(*) as n from changes where kind = ${kind} and record_id = ${recordId}`
    total = row.n
  }
  return { rows: rows.map(({ total: _total, ...entry }) => entry), total }
}
