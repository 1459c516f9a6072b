import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { DATABASE_UNAVAILABLE } from '../../plugins/errors'

const Health = Type.Object({
  status: Type.Literal('ok'),
  database: Type.Literal('ok'),
  version: Type.String(),
  uptimeSeconds: Type.Integer({ minimum: 0 })
}, { $id: 'Health', title: 'Health' })

const Unhealthy = Type.Object({
  status: Type.Literal('unavailable'),
  database: Type.Literal('unreachable'),
  version: Type.String(),
  uptimeSeconds: Type.Integer({ minimum: 0 }),
  error: Type.String(),
  code: Type.Literal('SERVICE_UNAVAILABLE'),
  details: Type.Object({}, { additionalProperties: true })
}, { $id: 'Unhealthy', title: 'Unhealthy' })

const PROBE_TIMEOUT_MS = 5000

/** The database answers `select 1` within the timeout, or it counts as unreachable. */
async function probe (run: () => Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise((_resolve, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error('database did not answer in time'), { code: 'CONNECT_TIMEOUT' })), PROBE_TIMEOUT_MS)
  })
  try {
    await Promise.race([run(), timeout])
  } finally {
    clearTimeout(timer)
  }
}

const health: FastifyPluginAsyncTypebox = async function (fastify) {
  const started = Date.now()
  fastify.addSchema(Health)
  fastify.addSchema(Unhealthy)

  fastify.get('/api/health', {
    schema: {
      operationId: 'getHealth',
      tags: ['health'],
      summary: 'Whether the service and its database are up',
      security: [],
      response: { 200: Type.Ref('Health'), 503: Type.Ref('Unhealthy') }
    }
  }, async function (request, reply) {
    const common = { version: fastify.config.version, uptimeSeconds: Math.floor((Date.now() - started) / 1000) }
    try {
      await probe(() => fastify.sql`select 1`)
      return { status: 'ok' as const, database: 'ok' as const, ...common }
    } catch (error) {
      request.log.warn({ err: error }, 'health check: database unreachable')
      reply.code(503).header('retry-after', '5')
      return { status: 'unavailable' as const, database: 'unreachable' as const, ...common, error: DATABASE_UNAVAILABLE, code: 'SERVICE_UNAVAILABLE' as const, details: {} }
    }
  })
}

export default health
