import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { errors } from '../../lib/errors'
import { errorResponses, operations } from '../../lib/schemas'
import { getStats } from '../../sql/admin'
import families from './families'
import identities from './identities'
import users from './users'

const operation = operations(['admin'])

/**
 * Administration: users and families of the whole service, for users with role
 * `admin`. The role is the one authentication read from the database for this
 * request, so a demoted admin is refused at once. It is checked after the
 * request's schema, like every other access check.
 */
const admin: FastifyPluginAsyncTypebox = async function (fastify) {

  // No personal access token administers (plugins/token-rules.ts).
  fastify.addHook('onRoute', route => {
    route.config = { ...route.config, personalTokens: 'refused' }
  })

  fastify.addHook('preHandler', async request => {
    if (request.user.role !== 'admin') throw new errors.forbidden()
  })

  fastify.get('/api/admin/stats', {
    schema: operation('getAdminStats', 'Counts of everything the service holds', { response: { 200: Type.Ref('Stats'), ...errorResponses(401, 403) } })
  }, async request => ({ ...(await getStats(request.db)), responseCache: fastify.responses.stats() }))

  await fastify.register(users)
  await fastify.register(identities)
  await fastify.register(families)
}

export default admin
