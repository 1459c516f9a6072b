import type { FastifyInstance } from 'fastify'
import { measurementKind } from '../../kinds/measurements'
import { recordRoutes, type RecordSpec } from '../records'
import { measurementImport } from './import'

export const measurementSpec: RecordSpec = {
  ...measurementKind,
  path: 'measurements',
  singular: 'Measurement',
  plural: 'Measurements',
}

export default async function measurements (fastify: FastifyInstance): Promise<void> {
  await fastify.register(recordRoutes(measurementSpec))
  await fastify.register(measurementImport(measurementSpec))
}
