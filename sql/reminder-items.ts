import type { Db } from '../db/client'
import { dayIn } from '../lib/days'
import type { ReminderSubject } from '../lib/reminders/message'
import { dueOfChildren, latestDoses } from './medical-events'
import { allowedMedicineDoses } from './medicine-courses'

/**
 * Something a member is reminded of, found by a source below. `itemKey` is
 * stable and unique across sources ("due:<medicalEventId>:<date>"): a
 * reminder leaves once per member, channel and key, so a key that names the
 * date reminds again when the date moves. `subject` and `date`, with the
 * child's first name, are all a reminder tells.
 */
export interface ReminderItem {
  familyId: number
  childId: number
  childFirstName: string
  itemKey: string
  /** What the item is, written in each member's language when it is recorded. */
  subject: ReminderSubject
  /** YYYY-MM-DD. */
  date: string
}

/** The moment a scan looks from, in the time zone of the members it looks for. */
export interface ReminderWindow {
  /** Today in `timeZone`, YYYY-MM-DD. */
  today: string
  now: Date
  /** An IANA time zone: the members' whose reminders are being found. */
  timeZone: string
}

/**
 * A source of reminders: the items of the children of `familyIds` that are
 * due at `window` (due now, not merely upcoming). The scan calls every source
 * of REMINDER_SOURCES once a minute for each time zone of its members, and
 * records what is new; an item a source keeps finding is not sent again.
 */
export type ReminderSource = (db: Db, familyIds: number[], window: ReminderWindow) => Promise<ReminderItem[]>

/** A vaccine's next dose whose nextDueDate is reached: the latest dose of each vaccine, as the due list reads them. */
export const vaccineDueDates: ReminderSource = async (db, familyIds, { today }) => {
  const rows = await db<Array<Omit<ReminderItem, 'subject' | 'childFirstName'> & { firstName: string, name: string, doseNumber: number | null }>>`
    select
      ch.family_id as "familyId", ch.id as "childId",
      (regexp_split_to_array(btrim(ch.name), '\\s+'))[1] as "firstName",
      'due:' || d.id || ':' || d.next_due_date as "itemKey",
      btrim(d.name) as name, d.dose_number as "doseNumber", d.next_due_date as date
    from (${latestDoses(db, db`select id from children where family_id = any(${familyIds}::integer[])`)}) d
    join children ch on ch.id = d.child_id
    where d.next_due_date <= ${today}::date
  `
  return rows.map(({ firstName, name, doseNumber, ...row }) => ({
    ...row,
    childFirstName: firstName,
    subject: { kind: 'vaccine', vaccine: name, dose: doseNumber === null ? null : doseNumber + 1 }
  }))
}

/** A visit tomorrow: from the day before it, and on its day when the day before was missed. */
export const visitsTomorrow: ReminderSource = async (db, familyIds, { today }) => {
  const rows = await db<Array<Omit<ReminderItem, 'subject' | 'childFirstName'> & { firstName: string, type: string }>>`
    select
      ch.family_id as "familyId", ch.id as "childId",
      (regexp_split_to_array(btrim(ch.name), '\\s+'))[1] as "firstName",
      'visit:' || v.id || ':' || v.date as "itemKey",
      v.type, v.date
    from children ch
    join visits v on v.child_id = ch.id
    where ch.family_id = any(${familyIds}::integer[])
      and v.date between ${today}::date and ${today}::date + 1
  `
  return rows.map(({ firstName, type, ...row }) => ({ ...row, childFirstName: firstName, subject: { kind: 'visit', type } }))
}

/**
 * A dose of the child's vaccine schedule that is due or overdue (the due
 * list's schedule items). One item a dose: the key names the child's
 * schedule, the series and the dose, not the status, so a dose is reminded of
 * once, when it becomes due, or when it is first found overdue (a schedule set
 * for a child whose doses are past their range).
 */
export const scheduleDoses: ReminderSource = async (db, familyIds, { today }) => {
  const { children } = await dueOfChildren(db, { familyIds }, today, ['due', 'overdue'])
  const items: ReminderItem[] = []
  for (const child of children) {
    for (const item of child.items) {
      if (item.source !== 'schedule') continue
      items.push({
        familyId: child.familyId,
        childId: child.childId,
        childFirstName: firstWord(child.childName),
        itemKey: `schedule:${child.childId}:${child.scheduleId ?? ''}:${item.vaccine ?? ''}:${item.doseNumber ?? ''}`,
        subject: { kind: 'schedule-dose', vaccine: item.name, dose: item.doseNumber ?? null, overdue: item.status === 'overdue' },
        date: item.status === 'overdue' ? item.dueBy : item.dueFrom
      })
    }
  }
  return items
}

/** The first word of a child's name: a reminder carries no last name. */
function firstWord (name: string): string {
  return name.trim().split(/\s+/)[0] ?? ''
}

/**
 * A medicine dose allowed again, for a course that asks to remind (`remind`)
 * while it runs. One item an allowed dose: the key names the course and its
 * nextDoseAllowedAt, which moves on with the next dose given. The time it is
 * allowed from is told in the members' time zone.
 */
export const medicineDoses: ReminderSource = async (db, familyIds, { now, timeZone }) => {
  const rows = await allowedMedicineDoses(db, now, 10_000, familyIds)
  return rows.map(row => ({
    familyId: row.familyId,
    childId: row.childId,
    childFirstName: row.childFirstName,
    itemKey: `medicine:${row.courseId}:${row.nextDoseAllowedAt.toISOString()}`,
    subject: { kind: 'medicine-dose', course: row.courseName, allowedAt: row.nextDoseAllowedAt },
    date: dayIn(row.nextDoseAllowedAt, timeZone)
  }))
}

/**
 * Every source of reminders, in one place: a new kind of reminder is one
 * function of the ReminderSource type and one entry here.
 */
export const REMINDER_SOURCES: ReminderSource[] = [vaccineDueDates, visitsTomorrow, scheduleDoses, medicineDoses]
