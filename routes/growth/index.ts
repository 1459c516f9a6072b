import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { childGrowth } from '../../lib/growth/child'
import { CLOCK_ETAG, ConditionalRead, NotModified, WithETag, errorResponses } from '../../lib/schemas'
import { growthChild, growthMeasurements } from '../../sql/growth'
import { Growth, GrowthPoint, GrowthScore } from '../../lib/growth/schemas'
import { GrowthParams, GrowthQuery } from './schemas'

const growth: FastifyPluginAsyncTypebox = async function (fastify) {
  const { sql } = fastify
  for (const schema of [GrowthScore, GrowthPoint, Growth]) fastify.addSchema(schema)

  fastify.get('/api/children/:childId/growth', {
    preHandler: fastify.familyScope({ target: { child: 'params.childId' }, name: 'Child', etag: 'child', cache: true }),
    schema: {
      operationId: 'getChildGrowth',
      tags: ['growth'],
      summary: 'A child\'s measurements with age, BMI and WHO z-scores and percentiles',
      description: [
        'Every measurement in range, oldest first. WHO Child Growth Standards 2006 under 60 months, WHO Reference 2007 from 60 months. A score is null where the value is missing, the child\'s sex is other, or the age or size is outside the reference.',
        'A child born preterm (gestationalAgeAtBirthWeeks under 37) is scored at the corrected age, as WHO and CDC practice does: chronological age less (40 weeks − gestational age at birth), that is correctedAgeDays = ageDays − (280 − (weeks × 7 + days)), days counting 0 when unknown. The correction stops at 24 months of chronological age (ageDays under 730.5, 24 × 30.4375, is corrected; from day 731 the age is chronological). Each point says which age its scores use (scoredAt) and answers correctedAgeDays (null when not corrected); ageDays and ageMonths are always chronological. A measurement before the term date (correctedAgeDays below 0) has every score null, since the references start at birth at term.',
        'The reference curves of /api/growth-standards are by age since birth at term: a chart draws a corrected point at correctedAgeDays and any other at ageDays.'
      ].join('\n\n'),
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
