import type { FastifyInstance } from 'fastify'
import type { RecordKindName } from '../kinds'
import illnesses from './illnesses'
import measurements from './measurements'
import medicalEvents from './medical-events'
import temperatures from './temperatures'
import visits from './visits'

/**
 * The routes of each kind of a child's records, by the kind's name: the app
 * registers them in the order of the registry, and a kind without its routes
 * does not compile.
 */
export const kindRoutes: Record<RecordKindName, (fastify: FastifyInstance) => Promise<void>> = {
  measurement: measurements,
  visit: visits,
  medicalEvent: medicalEvents,
  illness: illnesses,
  temperature: temperatures
}
