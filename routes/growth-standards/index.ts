import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { referenceCurve } from '../../lib/growth/curves'
import { GROWTH_SOURCE } from '../../lib/growth/sources'
import { errorResponses } from '../../lib/schemas'
import { GrowthStandard, GrowthStandardParams, GrowthStandardQuery } from './schemas'

const growthStandards: FastifyPluginAsyncTypebox = async function (fastify) {
  fastify.addSchema(GrowthStandard)

  fastify.get('/api/growth-standards/:indicator', {
    schema: {
      operationId: 'getGrowthStandard',
      tags: ['growth'],
      summary: 'The WHO reference curves of one growth indicator for one sex',
      security: [{ bearer: [] }],
      params: GrowthStandardParams,
      querystring: GrowthStandardQuery,
      response: {
        200: Type.Ref('GrowthStandard'),
        ...errorResponses(400, 401, 403),
        503: Type.Ref('Error', { description: 'The WHO growth reference tables are not installed, or the database is unavailable' })
      }
    }
  }, async function (request) {
    const tables = fastify.growth.requireTables()
    const { indicator } = request.params
    const { sex, from, to, step } = request.query
    const { points, ...curve } = referenceCurve(tables, indicator, sex, { from, to, step })
    return { ...curve, source: GROWTH_SOURCE, points }
  })
}

export default growthStandards
