import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { childGrowth } from '../../lib/growth/child'
import { CLOCK_ETAG, ConditionalRead, NotModified, WithETag, errorResponses } from '../../lib/schemas'
import { growthChild, growthMeasurements } from '../../sql/growth'
import { Growth, GrowthParams, GrowthPoint, GrowthQuery, GrowthScore } from './schemas'

const growth: FastifyPluginAsyncTypebox = async function (fastify) {
  const { sql } = fastify
  for (const schema of [GrowthScore, GrowthPoint, Growth]) fastify.addSchema(schema)

  fastify.get('/api/children/:childId/growth', {
    preHandler: fastify.familyScope({ target: { child: 'params.childId' }, name: 'Child', etag: 'child', cache: true }),
    schema: {
      operationId: 'getChildGrowth',
      tags: ['growth'],
      summary: 'A child\'s measurements with age, BMI and WHO z-scores and percentiles',
      description: 'Every measurement in range, oldest first. WHO Child Growth Standards 2006 under 60 months, WHO Reference 2007 from 60 months. A score is null where the value is missing, the child\'s sex is other, or the age or size is outside the reference.',
      security: [{ bearer: [] }],
      params: GrowthParams,
      querystring: GrowthQuery,
      headers: ConditionalRead,
      response: { 200: WithETag(Type.Ref('Growth'), CLOCK_ETAG), 304: NotModified, ...errorResponses(400, 401, 403, 404) }
    }
  }, async request => {
    const tables = fastify.growth.requireTables()
    const childId = request.params.childId
    const [child, measurements] = await Promise.all([
      growthChild(sql, childId),
      growthMeasurements(sql, childId, request.query.from ?? null, request.query.to ?? null)
    ])
    return childGrowth(tables, { id: childId, ...child }, measurements)
  })
}

export default growth
