// What a child's due list holds: the vaccines whose latest dose names a next
// due date, and the doses of the child's schedule not yet recorded. Pure:
// the SQL layer reads the rows, this works the list out.
import { addAge, daysBetween, lastDayThrough } from './ages'
import type { ScheduleSeries, VaccineSchedule } from './schema'

export const DUE_STATUSES = ['upcoming', 'due', 'overdue'] as const
export type DueStatus = typeof DUE_STATUSES[number]

/** A vaccine record as the schedule reads it: its series code, its dose number, its date. */
export interface RecordedDose {
  id: number
  vaccine: string
  doseNumber: number | null
  /** YYYY-MM-DD */
  date: string
}

/** The latest dose of a vaccine (by name), when it names a next due date. */
export interface LatestDose {
  id: number
  name: string
  vaccine: string | null
  doseNumber: number | null
  date: string
  nextDueDate: string
}

/** One item of a due list, of either source, as GET /api/children/:childId/due answers it. */
export interface DueItem {
  source: 'nextDueDate' | 'schedule'
  name: string
  vaccine: string | null
  doseNumber: number | null
  dueFrom: string
  dueBy: string
  status: DueStatus
  dueDate: string
  overdue: boolean
  daysUntilDue: number
  lastDose: { id: number, date: string, doseNumber: number | null } | null
}

/** upcoming before dueFrom, due from dueFrom through dueBy, overdue after dueBy. */
export function statusOn (dueFrom: string, dueBy: string, today: string): DueStatus {
  if (today < dueFrom) return 'upcoming'
  return today > dueBy ? 'overdue' : 'due'
}

/** A vaccine whose latest dose names a next due date: due on that day, overdue after it. */
export function nextDueItem (latest: LatestDose, today: string): DueItem {
  const status = statusOn(latest.nextDueDate, latest.nextDueDate, today)
  return {
    source: 'nextDueDate',
    name: latest.name,
    vaccine: latest.vaccine,
    doseNumber: latest.doseNumber === null ? null : latest.doseNumber + 1,
    dueFrom: latest.nextDueDate,
    dueBy: latest.nextDueDate,
    status,
    dueDate: latest.nextDueDate,
    overdue: status === 'overdue',
    daysUntilDue: daysBetween(today, latest.nextDueDate),
    lastDose: { id: latest.id, date: latest.date, doseNumber: latest.doseNumber }
  }
}

function later (a: string, b: string): string {
  return a > b ? a : b
}

function byDate (a: RecordedDose, b: RecordedDose): number {
  return a.date < b.date ? -1 : a.date > b.date ? 1 : a.id - b.id
}

/**
 * Which recorded doses count for which dose of a series: a record with a
 * doseNumber of the series counts for that dose; a record without one counts,
 * in date order, for the lowest dose that no record names; a doseNumber
 * beyond the series counts for nothing. Answers the records of each dose.
 */
export function recordedDoses (series: ScheduleSeries, doses: RecordedDose[]): Map<number, RecordedDose[]> {
  const byDose = new Map<number, RecordedDose[]>()
  const size = series.doses.length
  const mine = doses.filter(dose => dose.vaccine === series.code).sort(byDate)
  for (const dose of mine) {
    if (dose.doseNumber !== null && dose.doseNumber <= size) byDose.set(dose.doseNumber, [...(byDose.get(dose.doseNumber) ?? []), dose])
  }
  for (const dose of mine) {
    if (dose.doseNumber !== null) continue
    const open = series.doses.find(scheduled => !byDose.has(scheduled.number))
    if (open === undefined) break
    byDose.set(open.number, [dose])
  }
  return byDose
}

/**
 * The doses of a schedule that a child born on `birthDate` has not had, as
 * due items, ordered as a due list is. For each dose not recorded: dueFrom is
 * the day the child reaches the start of its on-time range or, when the
 * series' previous dose is recorded, that dose's date plus the minimum
 * interval if later (the latest record of that dose counts); dueBy is the
 * last day of the range, never before dueFrom; the status counts from
 * `today`. A series with every dose recorded has no item.
 */
export function scheduleDue (schedule: VaccineSchedule, birthDate: string, doses: RecordedDose[], today: string): DueItem[] {
  const items: DueItem[] = []
  for (const series of schedule.series) {
    const recorded = recordedDoses(series, doses)
    const latest = doses.filter(dose => dose.vaccine === series.code).sort(byDate).at(-1)
    for (const dose of series.doses) {
      if (recorded.has(dose.number)) continue
      let dueFrom = addAge(birthDate, dose.onTime.from)
      const previous = series.doses[dose.number - 2]
      const given = recorded.get(dose.number - 1)?.at(-1)
      if (previous?.minIntervalToNext != null && given !== undefined) dueFrom = later(dueFrom, addAge(given.date, previous.minIntervalToNext))
      const dueBy = later(lastDayThrough(birthDate, dose.onTime.to), dueFrom)
      const status = statusOn(dueFrom, dueBy, today)
      items.push({
        source: 'schedule',
        name: series.name,
        vaccine: series.code,
        doseNumber: dose.number,
        dueFrom,
        dueBy,
        status,
        dueDate: dueFrom,
        overdue: status === 'overdue',
        daysUntilDue: daysBetween(today, dueFrom),
        lastDose: latest === undefined ? null : { id: latest.id, date: latest.date, doseNumber: latest.doseNumber }
      })
    }
  }
  return items.sort(compareDue)
}

function compareNullable<T extends string | number> (a: T | null, b: T | null): number {
  if (a === b) return 0
  if (a === null) return 1
  if (b === null) return -1
  return a < b ? -1 : 1
}

/**
 * The order of a due list: overdue items first, then by dueFrom, then by
 * vaccine code and dose number (items without them after), then by name
 * (case-insensitively), the nextDueDate items before the schedule's, and
 * by the latest dose's id.
 */
export function compareDue (a: DueItem, b: DueItem): number {
  const overdue = Number(b.status === 'overdue') - Number(a.status === 'overdue')
  if (overdue !== 0) return overdue
  return compareNullable(a.dueFrom, b.dueFrom) ||
    compareNullable(a.vaccine, b.vaccine) ||
    compareNullable(a.doseNumber, b.doseNumber) ||
    compareNullable(a.name.trim().toLowerCase(), b.name.trim().toLowerCase()) ||
    compareNullable(a.source, b.source) ||
    compareNullable(a.lastDose?.id ?? null, b.lastDose?.id ?? null)
}

/** A child's whole due list: the nextDueDate items and, with a schedule, the schedule's, in the list's order. */
export function dueList (
  schedule: VaccineSchedule | undefined, birthDate: string, latest: LatestDose[], doses: RecordedDose[], today: string
): DueItem[] {
  const items = latest.map(dose => nextDueItem(dose, today))
  if (schedule !== undefined) items.push(...scheduleDue(schedule, birthDate, doses, today))
  return items.sort(compareDue)
}
