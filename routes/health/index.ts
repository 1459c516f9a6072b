import { operations } from '../../lib/schemas'
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { DATABASE_UNAVAILABLE } from '../../plugins/errors'
import { settledWithin } from '../../lib/waiting'

const operation = operations(['health'], [])

// Enums, not unions of literals: the answer's serializer then needs no Ajv to
// choose a branch, and a check asked every few seconds loads none.
const GrowthState = Type.Unsafe<'ok' | 'missing'>({
  type: 'string',
  enum: ['ok', 'missing'],
  description: 'whether the WHO growth reference tables are in place; `missing` leaves the status 200, since everything else works (copy the tables into GROWTH_DATA_DIR: they are picked up without a restart)'
})

const Health = Type.Object({
  status: Type.Literal('ok'),
  database: Type.Literal('ok'),
  growth: GrowthState,
  version: Type.String(),
  uptimeSeconds: Type.Integer({ minimum: 0 })
}, { $id: 'Health', title: 'Health' })

const Unhealthy = Type.Object({
  status: Type.Literal('unavailable'),
  database: Type.Unsafe<'unreachable' | 'saturated'>({
    type: 'string',
    enum: ['unreachable', 'saturated'],
    description: '`saturated` while no pooled database connection has been free for 5 s'
  }),
  growth: GrowthState,
  version: Type.String(),
  uptimeSeconds: Type.Integer({ minimum: 0 }),
  error: Type.String(),
  code: Type.Literal('SERVICE_UNAVAILABLE'),
  details: Type.Object({}, { additionalProperties: true })
}, { $id: 'Unhealthy', title: 'Unhealthy' })

const PROBE_TIMEOUT_MS = 5000
const SATURATED = 'Every database connection is taken; try again shortly'

/** The database answers `select 1` within the timeout, or it counts as unreachable. */
async function probe (run: () => Promise<unknown>): Promise<void> {
  const running = run()
  if (!(await settledWithin(running, PROBE_TIMEOUT_MS))) {
    throw Object.assign(new Error('database did not answer in time'), { code: 'CONNECT_TIMEOUT' })
  }
  await running
}

const health: FastifyPluginAsyncTypebox = async function (fastify) {
  const started = Date.now()
  fastify.addSchema(Health)
  fastify.addSchema(Unhealthy)

  fastify.get('/api/health', {
    schema: operation('getHealth', 'Whether the service and its database are up', {
      description: '503 while the database is unreachable or does not answer within 5 s, and while no pooled connection has been free for 5 s (`saturated`), so that a load balancer sends traffic elsewhere.',
      response: { 200: Type.Ref('Health'), 503: Type.Ref('Unhealthy') }
    })
  }, async function (request, reply) {
    fastify.growth.recheck()
    const growth = fastify.growth.ready ? 'ok' as const : 'missing' as const
    const common = { growth, version: fastify.config.version, uptimeSeconds: Math.floor((Date.now() - started) / 1000) }
    const unavailable = (database: 'unreachable' | 'saturated', error: string) => {
      reply.code(503).header('retry-after', '5')
      return { status: 'unavailable' as const, database, ...common, error, code: 'SERVICE_UNAVAILABLE' as const, details: {} }
    }
    if (fastify.pool.saturated) {
      request.log.warn('health check: no database connection has been free for 5 s')
      return unavailable('saturated', SATURATED)
    }
    try {
      await probe(() => fastify.sql`select 1`)
      return { status: 'ok' as const, database: 'ok' as const, ...common }
    } catch (error) {
      request.log.warn({ err: error }, 'health check: database unreachable')
      return unavailable('unreachable', DATABASE_UNAVAILABLE)
    }
  })
}

export default health
