import type { Db } from '../db/client'
import type { FeedVisit } from '../lib/calendar'

export interface CalendarFeed {
  id: number
  familyId: number
  familyName: string
  createdAt: Date
}

/** What a feed's link shows: the family's name and its visits in range, by date. */
export interface FeedContent {
  familyName: string
  visits: FeedVisit[]
}

/**
 * Locks the user's row for the rest of the transaction and answers how many
 * feeds the user has, so that two creates at once cannot pass the limit together.
 */
export async function lockFeedCount (db: Db, userId: number): Promise<number> {
  await db`select id from users where id = ${userId} for no key update`
  const [row] = await db<{ n: number }[]>`select count(*)::int as n from calendar_feeds where user_id = ${userId}`
  return row.n
}

export async function insertFeed (
  db: Db, feed: { userId: number, familyId: number, tokenHash: string }
): Promise<{ id: number, createdAt: Date }> {
  const [row] = await db<{ id: number, createdAt: Date }[]>`
    insert into calendar_feeds (user_id, family_id, token_hash)
    values (${feed.userId}, ${feed.familyId}, ${feed.tokenHash})
    returning id, created_at as "createdAt"
  `
  return row
}

export async function listFeeds (db: Db, userId: number, limit: number, offset: number): Promise<{ rows: CalendarFeed[], total: number }> {
  const rows = await db<(CalendarFeed & { total: number })[]>`
    select
      c.id, c.family_id as "familyId", f.name as "familyName", c.created_at as "createdAt",
      (select count(*) from calendar_feeds where user_id = ${userId}) as total
    from calendar_feeds c
    join families f on f.id = c.family_id
    where c.user_id = ${userId}
    order by c.id
    limit ${limit} offset ${offset}
  `
  const total = rows[0]?.total ?? (await db<{ n: number }[]>`select count(*)::int as n from calendar_feeds where user_id = ${userId}`)[0].n
  return { rows, total }
}

/** Deletes one of the user's feeds; false when the user has no feed of that id. */
export async function deleteOwnFeed (db: Db, userId: number, id: number): Promise<boolean> {
  const rows = await db`delete from calendar_feeds where id = ${id} and user_id = ${userId} returning id`
  return rows.length > 0
}

/**
 * A feed's content by its token's hash, in one statement: undefined when no
 * feed has that hash, its user is disabled or no longer a member of its
 * family. Visits from 12 months back on, the future ones included.
 */
export async function readFeed (db: Db, tokenHash: string): Promise<FeedContent | undefined> {
  // A feed without visits is one row whose visit columns are null.
  const rows = await db<(Omit<FeedVisit, 'id'> & { id: number | null, familyName: string })[]>`
    with feed as (
      select c.family_id, f.name
      from calendar_feeds c
      join users u on u.id = c.user_id and not u.disabled
      join family_members m on m.family_id = c.family_id and m.user_id = c.user_id
      join families f on f.id = c.family_id
      where c.token_hash = ${tokenHash}
    )
    select feed.name as "familyName", v.*
    from feed
    left join lateral (
      select
        v.id, ch.name as "childName", v.date, v.type, v.provider, v.notes, v.version,
        v.updated_at as "updatedAt"
      from children ch
      join visits v on v.child_id = ch.id
      where ch.family_id = feed.family_id and v.date >= (current_date - interval '12 months')::date
    ) v on true
    order by v.date, v.id
  `
  if (rows.length === 0) return undefined
  const visits = rows.filter((row): row is FeedVisit & { familyName: string } => row.id !== null)
  return { familyName: rows[0].familyName, visits }
}
