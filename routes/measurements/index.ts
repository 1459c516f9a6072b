import type { FastifyInstance } from 'fastify'
import { measurementColumns } from '../../lib/kinds'
import { recordRoutes, type RecordSpec } from '../records'
import { measurementImport } from './import'
import { checkValues, Measurement, MeasurementFields } from './schemas'

export const measurementSpec: RecordSpec = {
  kind: 'measurement',
  path: 'measurements',
  table: 'measurements',
  singular: 'Measurement',
  plural: 'Measurements',
  schema: Measurement,
  fields: MeasurementFields,
  columns: measurementColumns,
  writable: ['measuredAt', 'heightCm', 'weightKg', 'headCircumferenceCm', 'visitId', 'notes'],
  dates: ['measuredAt'],
  sorts: { measuredAt: 'measured_at', createdAt: 'created_at' },
  defaultSort: '-measuredAt',
  check: body => checkValues(body)
}

export default async function measurements (fastify: FastifyInstance): Promise<void> {
  await fastify.register(recordRoutes(measurementSpec))
  await fastify.register(measurementImport(measurementSpec))
}
