import type { FastifyInstance } from 'fastify'
import { measurementKind } from '../../kinds/measurements'
import { measurementImport } from './import'

/** The CSV import of a child's measurements. */
export default async function measurementImports (fastify: FastifyInstance): Promise<void> {
  await fastify.register(measurementImport(measurementKind))
}
