// Vaccine schedules as data: the schema of a schedule, its checks, and the due
// list worked out from it. io/schedules reads the shipped ones.
export { parseSchedule, scheduleValidatorCode, useScheduleValidator } from './parse'
export { addAge, addDays, addMonths, daysBetween, lastDayThrough } from './ages'
export { AGE_UNITS, Age, ScheduleDose, ScheduleSeries, VaccineSchedule, type AgeUnit } from './schema'
export {
  DUE_STATUSES, compareDue, dueList, nextDueItem, recordedDoses, scheduleDue, statusOn,
  type DueItem, type DueStatus, type LatestDose, type RecordedDose
} from './due'
