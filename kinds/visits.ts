import { Type, type Static } from '@sinclair/typebox'
import { visitMapping } from '../lib/fhir'
import { FreeText, Id, IsoDate, Name, Nullable, StrictObject, Timestamp, Version } from '../lib/schemas'
import { columnsOf, storedPresenter } from './columns'
import type { RecordKind } from './kind'
import { checkValues, measurementKind, MeasurementValues } from './measurements'

const VISIT_TYPES = ['wellness', 'sick', 'injury', 'vision', 'dental'] as const

export const VisitType = Type.String({ enum: [...VISIT_TYPES] })

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

export const VisitCreateFields = {
  measurement: Type.Optional(Nullable(StrictObject(MeasurementValues, {
    description: 'A measurement taken at the visit: created with the visit\'s date and linked to it'
  })))
}

export const CreatedVisit = Type.Object({
  ...visitProperties,
  measurement: Type.Optional(Type.Ref('Measurement'))
}, { title: 'CreatedVisit', description: 'The visit, with the measurement created with it when there was one' })

const columns = columnsOf(Visit)

export const visitKind: RecordKind<'visit', 'visits', 'visits'> = {
  kind: 'visit',
  key: 'visits',
  table: 'visits',
  path: 'visits',
  singular: 'Visit',
  plural: 'Visits',
  fhir: visitMapping,
  filters: { type: { values: VISIT_TYPES, column: 'type' } },
  createFields: VisitCreateFields,
  createSchema: CreatedVisit,
  // A visit with a measurement: both are written in one transaction, or neither.
  createsWith: { field: 'measurement', kind: measurementKind, link: visit => ({ measuredAt: visit.date, visitId: visit.id }) },
  schema: Visit,
  fields: VisitFields,
  columns,
  present: storedPresenter(Visit, columns),
  writable: Object.keys(VisitFields),
  dates: ['date'],
  sorts: { date: 'date', type: 'type', createdAt: 'created_at' },
  defaultSort: '-date',
  // The measurement a visit may be created with.
  check: body => {
    const measurement = body.measurement as Record<string, unknown> | null | undefined
    return measurement == null ? [] : checkValues(measurement, '/body/measurement')
  }
}
