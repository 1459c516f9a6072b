import type { Db } from '../db/client'
import type { FeedDue, FeedScheduleDose, FeedVisit } from '../lib/calendar'
import { utcToday } from '../lib/days'
import { addMonths } from '../lib/schedules'
import { dueOfChildren, latestDoses } from './medical-events'
import { inCallerFamily, type Caller } from './access'
import { readPage, type Page, type PageRequest } from './list'

export interface CalendarFeed {
  id: number
  familyId: number
  familyName: string
  createdAt: Date
}

/** A visit, a vaccine's due date or a dose of a child's schedule, as one event of a feed. */
export type FeedEvent = { kind: 'visit', visit: FeedVisit } | { kind: 'due', due: FeedDue } | { kind: 'schedule', dose: FeedScheduleDose }

/**
 * What a feed's link shows: the family's name, and its visits, its vaccines'
 * due dates and its children's schedule doses in range, by date (visits
 * first on a day, then due dates, then schedule doses).
 */
export interface FeedContent {
  familyName: string
  events: FeedEvent[]
}

/** A row of the feed: a visit or a due date, or nulls for a feed without either. */
interface FeedRow {
  kind: 'visit' | 'due' | null
  id: number
  childName: string
  date: string
  type: string | null
  provider: string | null
  notes: string | null
  vaccine: string | null
  doseDate: string | null
  doseNumber: number | null
  version: number
  updatedAt: Date
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

/** The user's feeds (of the family a personal access token is bound to, if it is). */
export async function listFeeds (db: Db, who: Caller, page: PageRequest): Promise<Page<CalendarFeed>> {
  const mine = db`c.user_id = ${who.userId} and ${inCallerFamily(db, who, db`c.family_id`)}`
  return await readPage<CalendarFeed>(db, {
    ...page,
    select: db`c.id, c.family_id as "familyId", f.name as "familyName", c.created_at as "createdAt"`,
    from: db`from calendar_feeds c join families f on f.id = c.family_id where ${mine}`,
    order: db`order by c.id`,
    count: db`(select count(*) from calendar_feeds c where ${mine})`
  })
}

/** Deletes one of the user's feeds; false when the user has no feed of that id (within a token's family). */
export async function deleteOwnFeed (db: Db, who: Caller, id: number): Promise<boolean> {
  const rows = await db`delete from calendar_feeds where id = ${id} and user_id = ${who.userId} and ${inCallerFamily(db, who, db`family_id`)} returning id`
  return rows.length > 0
}

/**
 * A feed's content by its token's hash, in one statement: undefined when no
 * feed has that hash, its user is disabled or no longer a member of its
 * family. Visits from 12 months back on, the future ones included; the due
 * dates of the children's vaccines (of each vaccine's latest dose) in the
 * same range; and the doses of each child's schedule not yet recorded whose
 * dueFrom is in that range (today in UTC), as the due list works them out.
 */
export async function readFeed (db: Db, tokenHash: string): Promise<FeedContent | undefined> {
  // A feed without events is one row whose event columns are null.
  const rows = await db<Array<FeedRow & { familyName: string, familyId: number }>>`
    with feed as (
      select c.family_id, f.name
      from calendar_feeds c
      join users u on u.id = c.user_id and not u.disabled
      join family_members m on m.family_id = c.family_id and m.user_id = c.user_id
      join families f on f.id = c.family_id
      where c.token_hash = ${tokenHash}
    )
    select feed.name as "familyName", feed.family_id as "familyId", e.*
    from feed
    left join lateral (
      select
        'visit' as kind, v.id, ch.name as "childName", v.date, v.type, v.provider, v.notes,
        null::text as "vaccine", null::date as "doseDate", null::integer as "doseNumber",
        v.version, v.updated_at as "updatedAt"
      from children ch
      join visits v on v.child_id = ch.id
      where ch.family_id = feed.family_id and v.date >= (current_date - interval '12 months')::date
      union all
      select
        'due', d.id, ch.name, d.next_due_date, null, null, null,
        d.name, d.date, d.dose_number,
        d.version, d.updated_at
      from (${latestDoses(db, db`select id from children where family_id = feed.family_id`)}) d
      join children ch on ch.id = d.child_id
      where d.next_due_date >= (current_date - interval '12 months')::date
    ) e on true
    order by e.date, e.kind desc, e.id
  `
  if (rows.length === 0) return undefined
  const events: FeedEvent[] = []
  for (const row of rows) {
    if (row.kind === 'visit') {
      events.push({ kind: 'visit', visit: { id: row.id, childName: row.childName, date: row.date, type: row.type as string, provider: row.provider, notes: row.notes, version: row.version, updatedAt: row.updatedAt } })
    } else if (row.kind === 'due') {
      events.push({ kind: 'due', due: { id: row.id, childName: row.childName, name: row.vaccine as string, dueDate: row.date, date: row.doseDate as string, doseNumber: row.doseNumber, version: row.version, updatedAt: row.updatedAt } })
    }
  }
  const today = utcToday()
  const since = addMonths(today, -12)
  const { children } = await dueOfChildren(db, { familyId: rows[0].familyId }, today)
  for (const child of children) {
    for (const item of child.items) {
      if (item.source !== 'schedule' || item.dueFrom < since) continue
      events.push({
        kind: 'schedule',
        dose: {
          childId: child.childId, childName: child.childName, scheduleId: child.scheduleId as string, vaccine: item.vaccine as string,
          seriesName: item.name, doseNumber: item.doseNumber as number, dueFrom: item.dueFrom, dueBy: item.dueBy,
          sequence: child.changes, updatedAt: child.updatedAt
        }
      })
    }
  }
  return { familyName: rows[0].familyName, events: events.map((event, index) => ({ event, index })).sort(byDay).map(({ event }) => event) }
}

const RANK = { visit: 0, due: 1, schedule: 2 }

function dayOf (event: FeedEvent): string {
  return event.kind === 'visit' ? event.visit.date : event.kind === 'due' ? event.due.dueDate : event.dose.dueFrom
}

/** By day, visits first on a day, then due dates, then schedule doses; otherwise in the order read. */
function byDay (a: { event: FeedEvent, index: number }, b: { event: FeedEvent, index: number }): number {
  const [dayA, dayB] = [dayOf(a.event), dayOf(b.event)]
  if (dayA !== dayB) return dayA < dayB ? -1 : 1
  return RANK[a.event.kind] - RANK[b.event.kind] || a.index - b.index
}
