// Vaccine schedules as data: the shipped templates (schedules/*.json), read
// and checked once, and the due list worked out from them.
import { loadSchedules } from './load'
import type { VaccineSchedule } from './schema'

export { SCHEDULES_DIR, loadSchedules, parseSchedule, readSchedules } from './load'
export { addAge, addDays, addMonths, daysBetween, lastDayThrough } from './ages'
export { AGE_UNITS, Age, ScheduleDose, ScheduleSeries, VaccineSchedule, type AgeUnit } from './schema'
export {
  DUE_STATUSES, compareDue, dueList, nextDueItem, recordedDoses, scheduleDue, statusOn,
  type DueItem, type DueStatus, type LatestDose, type RecordedDose
} from './due'

/** The shipped schedules, in the order of their files. */
export function schedules (): VaccineSchedule[] {
  return loadSchedules()
}

/** A shipped schedule by its id, or undefined. */
export function scheduleById (id: string | null | undefined): VaccineSchedule | undefined {
  return id == null ? undefined : loadSchedules().find(schedule => schedule.id === id)
}

/** The ids of the shipped schedules. */
export function scheduleIds (): string[] {
  return loadSchedules().map(schedule => schedule.id)
}
