import { Type } from '@sinclair/typebox'
import { FreeText, Id, IsoDate, Nullable, Timestamp, Version } from '../../lib/schemas'
import type { Issue } from '../records'

const HeightCm = Type.Number({ minimum: 20, maximum: 250, 'x-max-decimals': 2 })
const WeightKg = Type.Number({ minimum: 0.2, maximum: 250, 'x-max-decimals': 3 })
const HeadCircumferenceCm = Type.Number({ minimum: 15, maximum: 80, 'x-max-decimals': 2 })

/** The values of a measurement, also taken by a visit created with one. */
export const MeasurementValues = {
  heightCm: Type.Optional(Nullable(HeightCm)),
  weightKg: Type.Optional(Nullable(WeightKg)),
  headCircumferenceCm: Type.Optional(Nullable(HeadCircumferenceCm)),
  notes: Type.Optional(Nullable(FreeText))
}

export const MeasurementFields = {
  measuredAt: IsoDate,
  ...MeasurementValues,
  visitId: Type.Optional(Nullable(Id))
}

export const Measurement = Type.Object({
  id: Id,
  childId: Id,
  measuredAt: IsoDate,
  heightCm: Nullable(Type.Number()),
  weightKg: Nullable(Type.Number()),
  headCircumferenceCm: Nullable(Type.Number()),
  visitId: Nullable(Id),
  notes: Nullable(Type.String()),
  version: Version,
  createdAt: Timestamp,
  updatedAt: Timestamp
}, { $id: 'Measurement', title: 'Measurement' })

/** At least one of the three values. */
export function checkValues (values: Record<string, unknown>, path = '/body'): Issue[] {
  const some = ['heightCm', 'weightKg', 'headCircumferenceCm'].some(key => values[key] !== undefined && values[key] !== null)
  return some ? [] : [{ path, message: 'must have at least one of heightCm, weightKg, headCircumferenceCm' }]
}

/** A row of a CSV import as it would be created, for a dry run: absent values are null. */
export const MeasurementImportRow = Type.Object({
  measuredAt: IsoDate,
  heightCm: Nullable(Type.Number()),
  weightKg: Nullable(Type.Number()),
  headCircumferenceCm: Nullable(Type.Number()),
  notes: Nullable(Type.String())
})

export const MeasurementImported = Type.Object({
  dryRun: Type.Literal(false),
  count: Type.Integer({ minimum: 1 }),
  data: Type.Array(Type.Ref('Measurement'), { description: 'the measurements created, in the order of the file' })
}, { description: 'Every row was created' })

export const MeasurementImportChecked = Type.Object({
  dryRun: Type.Literal(true),
  count: Type.Integer({ minimum: 1 }),
  data: Type.Array(MeasurementImportRow, { description: 'the measurements that would be created, in the order of the file' })
}, { description: 'Every row passed the checks; nothing was written' })

export const MeasurementImportQuery = Type.Object({
  dryRun: Type.Optional(Type.Boolean({ default: false, description: 'check the file and answer what would be created, without writing anything' }))
})
