import { Type, type Static } from '@sinclair/typebox'
import { FreeText, Id, IsoDate, Name, Nullable, Timestamp, Version } from '../lib/schemas'
import { columnsOf, storedPresenter } from './columns'
import type { RecordKind } from './kind'
import { checkValues } from './measurements'

export const VisitType = Type.String({ enum: ['wellness', 'sick', 'injury', 'vision', 'dental'] })

export const VisitFields = {
  date: IsoDate,
  type: VisitType,
  provider: Type.Optional(Nullable(Name(200))),
  notes: Type.Optional(Nullable(FreeText))
}

/** A visit's fields as its answers hold them; a create's answer adds the measurement created with it. */
export const visitProperties = {
  id: Id,
  childId: Id,
  date: IsoDate,
  type: VisitType,
  provider: Nullable(Type.String()),
  notes: Nullable(Type.String()),
  version: Version,
  createdAt: Timestamp,
  updatedAt: Timestamp
}

export const Visit = Type.Object(visitProperties, { $id: 'Visit', title: 'Visit' })
export type Visit = Static<typeof Visit>

const columns = columnsOf(Visit)

export const visitKind: RecordKind<'visit', 'visits', 'visits'> = {
  kind: 'visit',
  key: 'visits',
  table: 'visits',
  schema: Visit,
  fields: VisitFields,
  columns,
  present: storedPresenter(Visit, columns),
  writable: ['date', 'type', 'provider', 'notes'],
  dates: ['date'],
  sorts: { date: 'date', type: 'type', createdAt: 'created_at' },
  defaultSort: '-date',
  // The measurement a visit may be created with.
  check: body => {
    const measurement = body.measurement as Record<string, unknown> | null | undefined
    return measurement == null ? [] : checkValues(measurement, '/body/measurement')
  }
}
