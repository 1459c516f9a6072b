import { Type, type TObject } from '@sinclair/typebox'

/** A row of a CSV import as it would be created, for a dry run: the columns' fields as a measurement answers them, absent values null. */
export const MeasurementImportRow = (schema: TObject, columns: string[]) => Type.Object(Object.fromEntries(columns.map(column => [column, schema.properties[column]])))

export const MeasurementImported = Type.Object({
  dryRun: Type.Literal(false),
  count: Type.Integer({ minimum: 1 }),
  data: Type.Array(Type.Ref('Measurement'), { description: 'the measurements created, in the order of the file' })
}, { description: 'Every row was created' })

export const MeasurementImportChecked = (schema: TObject, columns: string[]) => Type.Object({
  dryRun: Type.Literal(true),
  count: Type.Integer({ minimum: 1 }),
  data: Type.Array(MeasurementImportRow(schema, columns), { description: 'the measurements that would be created, in the order of the file' })
}, { description: 'Every row passed the checks; nothing was written' })

export const MeasurementImportQuery = Type.Object({
  dryRun: Type.Optional(Type.Boolean({ default: false, description: 'check the file and answer what would be created, without writing anything' }))
})
