import type { PendingQuery, Row } from 'postgres'
import type { Db } from '../db/client'
import { scheduleById } from '../io/schedules'
import { pageOfAll, type Page, type PageRequest } from './list'
import { dueList, type DueItem, type DueStatus, type LatestDose, type RecordedDose } from '../lib/schedules'

type Fragment = PendingQuery<Row[]>

/**
 * The latest dose of each of a child's vaccines (the latest date, then the
 * highest id; names compared case-insensitively after trimming), as rows of
 * medical_events, for a query to read from.
 */
export function latestDoses (db: Db, childIds: PendingQuery<Row[]>): PendingQuery<Row[]> {
  return db`
    select distinct on (e.child_id, lower(btrim(e.name))) e.*
    from medical_events e
    where e.child_id in (${childIds}) and e.type = 'vaccine'
    order by e.child_id, lower(btrim(e.name)), e.date desc, e.id desc
  `
}

/** What a child's due list is worked out from. */
export interface DueFacts {
  childId: number
  familyId: number
  childName: string
  dateOfBirth: string
  scheduleId: string | null
  updatedAt: Date
  /** How many changes the child has had: grows with every change of it or its records. */
  changes: number
  /** The latest dose of each vaccine, when it names a next due date. */
  latest: LatestDose[]
  /** The child's vaccine records that name a series. */
  doses: RecordedDose[]
}

/** The facts of the children a condition over `c` (children) selects, by id. */
async function dueFacts (db: Db, where: Fragment, limit: Fragment = db``): Promise<DueFacts[]> {
  return await db<DueFacts[]>`
    select
      c.id as "childId", c.family_id as "familyId", c.name as "childName", c.date_of_birth as "dateOfBirth",
      c.schedule_id as "scheduleId", c.updated_at as "updatedAt", child_changes(c.id)::integer as changes,
      (
        select coalesce(json_agg(json_build_object(
          'id', l.id, 'name', l.name, 'vaccine', l.vaccine, 'doseNumber', l.dose_number, 'date', l.date, 'nextDueDate', l.next_due_date
        )), '[]'::json)
        from (${latestDoses(db, db`c.id`)}) l
        where l.next_due_date is not null
      ) as latest,
      (
        select coalesce(json_agg(json_build_object('id', e.id, 'vaccine', e.vaccine, 'doseNumber', e.dose_number, 'date', e.date)), '[]'::json)
        from medical_events e
        where e.child_id = c.id and e.type = 'vaccine' and e.vaccine is not null
      ) as doses
    from children c
    where ${where}
    order by c.id
    ${limit}
  `
}

/** A child's due list from its facts: the nextDueDate items and its schedule's. */
function itemsOf (facts: DueFacts, today: string): DueItem[] {
  return dueList(scheduleById(facts.scheduleId), facts.dateOfBirth, facts.latest, facts.doses, today)
}

/**
 * A page of a child's due list (lib/schedules, dueList): the vaccines whose
 * latest dose names a next due date, and the doses of the child's schedule
 * not yet recorded, overdue first, then by dueFrom; with the total. A child's
 * list is short (a few dozen doses at most), so it is worked out whole.
 */
export async function dueVaccines (
  db: Db, childId: number, today: string, page: PageRequest
): Promise<Page<DueItem>> {
  const [facts] = await dueFacts(db, db`c.id = ${childId}`)
  return pageOfAll(facts === undefined ? [] : itemsOf(facts, today), page)
}

/** A child's due items, with what a reminder or a calendar names it by. */
export interface ChildDue {
  childId: number
  familyId: number
  childName: string
  scheduleId: string | null
  updatedAt: Date
  changes: number
  items: DueItem[]
}

/**
 * Which children: those of a family, those of a list, or every child after
 * an id, a batch at a time (a scanner walks them by `afterChildId`).
 */
export type DueScope = { familyId: number } | { familyIds: number[] } | { childIds: number[] } | { afterChildId: number, limit: number }

/**
 * The due items of several children, by child id, for reminders and
 * calendars: each child's whole due list as GET /api/children/:childId/due
 * answers it, or only the items of the given statuses (a reminder asks for
 * `due` and `overdue`). A child without items is left out; `lastChildId` is
 * the highest id read (null when none was), where a scan goes on from.
 */
export async function dueOfChildren (
  db: Db, scope: DueScope, today: string, statuses: readonly DueStatus[] = ['upcoming', 'due', 'overdue']
): Promise<{ children: ChildDue[], lastChildId: number | null }> {
  const rows = 'familyId' in scope
    ? await dueFacts(db, db`c.family_id = ${scope.familyId}`)
    : 'familyIds' in scope
      ? await dueFacts(db, db`c.family_id = any(${scope.familyIds}::integer[])`)
      : 'childIds' in scope
        ? await dueFacts(db, db`c.id = any(${scope.childIds}::integer[])`)
        : await dueFacts(db, db`c.id > ${scope.afterChildId}`, db`limit ${scope.limit}`)
  const out: ChildDue[] = []
  for (const facts of rows) {
    const items = itemsOf(facts, today).filter(item => statuses.includes(item.status))
    if (items.length === 0) continue
    const { childId, familyId, childName, scheduleId, updatedAt, changes } = facts
    out.push({ childId, familyId, childName, scheduleId, updatedAt, changes, items })
  }
  return { children: out, lastChildId: rows.at(-1)?.childId ?? null }
}
