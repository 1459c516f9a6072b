import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { referenceCurve } from '../../lib/growth/curves'
import { growthSource } from '../../lib/growth/charts'
import { errorResponses, operations } from '../../lib/schemas'
import { GrowthStandard, GrowthStandardParams, GrowthStandardQuery } from './schemas'

const operation = operations(['growth'])

const growthStandards: FastifyPluginAsyncTypebox = async function (fastify) {
  fastify.addSchema(GrowthStandard)

  fastify.get('/api/growth-standards/:indicator', {
    schema: operation('getGrowthStandard', 'The reference curves of one growth indicator for one sex, on WHO\'s or CDC\'s charts', {
      params: GrowthStandardParams, querystring: GrowthStandardQuery,
      response: {
        200: Type.Ref('GrowthStandard'),
        ...errorResponses(400, 401, 403),
        503: Type.Ref('Error', { description: 'The WHO growth reference tables are not installed (reference who or auto), or the database is unavailable' })
      }
    })
  }, async function (request) {
    const { indicator } = request.params
    const { sex, from, to, step, reference = 'who' } = request.query
    const { tables, options } = fastify.growth.charts(reference)
    const { points, ...curve } = referenceCurve(tables, indicator, sex, { from, to, step }, options)
    return { ...curve, source: growthSource(reference), points }
  })
}

export default growthStandards
