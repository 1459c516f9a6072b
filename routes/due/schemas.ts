import { Type } from '@sinclair/typebox'
import { Id, IsoDate, Nullable, Pagination, StrictObject } from '../../lib/schemas'
import { DUE_STATUSES } from '../../lib/schedules'

const Day = Type.String({ format: 'date' })

export const DueVaccine = Type.Object({
  source: Type.String({
    enum: ['nextDueDate', 'schedule'],
    description: '`nextDueDate`: a vaccine whose latest dose names its next due date. `schedule`: a dose of the child\'s vaccine schedule not yet recorded'
  }),
  name: Type.String({ description: 'nextDueDate: the vaccine\'s name as its latest dose spells it. schedule: the series\' name in the schedule' }),
  vaccine: Nullable(Type.String({ description: 'The series\' code in the child\'s schedule (e.g. DTaP); for a nextDueDate item, the latest dose\'s vaccine (null when it names none)' })),
  doseNumber: Nullable(Type.Integer({ minimum: 1, description: 'The dose that is due: the schedule\'s dose, or the latest dose\'s doseNumber + 1 (null when it has none)' })),
  dueFrom: Type.String({ format: 'date', description: 'From when the dose is due. schedule: the day the child reaches the start of the dose\'s on-time range or, when the series\' previous dose is recorded, its date plus the minimum interval if later. nextDueDate: the nextDueDate' }),
  dueBy: Type.String({ format: 'date', description: 'The last day the dose is on time, never before dueFrom. schedule: the last day of the on-time range. nextDueDate: the nextDueDate' }),
  status: Type.String({ enum: [...DUE_STATUSES], description: '`upcoming` before dueFrom, `due` from dueFrom through dueBy, `overdue` after dueBy; today in UTC' }),
  dueDate: Day,
  overdue: Type.Boolean({ description: 'status is overdue: the day is past dueBy (for a nextDueDate item, past its due date), today in UTC' }),
  daysUntilDue: Type.Integer({ description: 'Days from today (UTC) to dueDate: 0 on the day, negative once it has passed' }),
  lastDose: Nullable(Type.Object({
    id: Id,
    date: IsoDate,
    doseNumber: Nullable(Type.Integer({ minimum: 1, maximum: 20 }))
  }, { description: 'nextDueDate: the latest dose of the vaccine, the medical event whose nextDueDate this is. schedule: the latest recorded dose of the series, null when none is' }))
}, {
  $id: 'DueVaccine',
  title: 'DueVaccine',
  description: 'One item of a due list, of either source. Every item has every field; dueDate is dueFrom, as the fields before sources were (dueDate, overdue, daysUntilDue, lastDose) read it'
})

export const DueParams = StrictObject({ childId: Id })
export const DueQuery = Type.Object({ ...Pagination })
