import { Type } from '@sinclair/typebox'
import { IsoDate, Nullable } from '../../lib/schemas'

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
