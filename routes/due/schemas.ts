import { Type } from '@sinclair/typebox'
import { Id, IsoDate, Nullable, Pagination, StrictObject } from '../../lib/schemas'

export const DueVaccine = Type.Object({
  name: Type.String({ description: 'The vaccine\'s name as its latest dose spells it' }),
  dueDate: Type.String({ format: 'date', description: 'The nextDueDate of the latest dose' }),
  overdue: Type.Boolean({ description: 'dueDate is before today (UTC)' }),
  daysUntilDue: Type.Integer({ description: 'Days from today (UTC) to dueDate: 0 on the day, negative when overdue' }),
  lastDose: Type.Object({
    id: Id,
    date: IsoDate,
    doseNumber: Nullable(Type.Integer({ minimum: 1, maximum: 20 }))
  }, { description: 'The latest dose of the vaccine: the medical event whose nextDueDate this is' })
}, { $id: 'DueVaccine', title: 'DueVaccine' })

export const DueParams = StrictObject({ childId: Id })
export const DueQuery = Type.Object({ ...Pagination })
