import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { GrowthReference } from '../../lib/growth/charts'
import { childGrowth } from '../../lib/growth/child'
import { errors } from '../../lib/errors'
import { CROSSING_MAX_DAYS } from '../../lib/growth/trends'
import { CLOCK_ETAG, ConditionalRead, NotModified, WithETag, errorResponses, operations } from '../../lib/schemas'
import { growthChild, growthMeasurements } from '../../sql/growth'
import { Growth, GrowthPoint, GrowthScore } from '../../lib/growth/schemas'
import { GrowthParams, GrowthQuery } from './schemas'

const operation = operations(['growth'])

const growth: FastifyPluginAsyncTypebox = async function (fastify) {
  for (const schema of [GrowthScore, GrowthPoint, Growth]) fastify.addSchema(schema)

  fastify.get('/api/children/:childId/growth', {
    preHandler: fastify.familyScope({ target: { child: 'params.childId' }, name: 'Child', etag: 'child', cache: true }),
    schema: operation('getChildGrowth', 'A child\'s measurements with age, BMI, z-scores and percentiles on WHO\'s or CDC\'s charts, velocity, centile crossings and alerts', {
      description: [
        'Every measurement in range, oldest first. With reference=who (the default unless the child\'s growthReference says otherwise): WHO Child Growth Standards 2006 under 60 months, WHO Reference 2007 from 60 months. With cdc: the CDC 2000 growth charts, the infant charts (weight, length and head circumference for age, weight-for-length 45 to 103.5 cm) under 24 months and the 2 to 20 year charts (weight, stature and BMI for age) from 24 months, head circumference on the infant chart until 36 months; CDC\'s method: L, M and S interpolated linearly between CDC\'s rows at the age in months (ageDays / 30.4375) or the length, z unrestricted, implausible values by CDC\'s cut-offs on its modified z-score. With auto: WHO 2006 under 24 months (730.5 days) of the scored age, CDC 2000 from then. Each score names its chart in reference. A score is null where the value is missing, the child\'s sex is other, or the age or size is outside the chart. CDC\'s charts ship with the service; WHO\'s tables may be missing (503 for who and auto, never for cdc).',
        'Each point has its velocity since the latest measurement at least 14 days before (null when there is none), and each score crossedLines: the major centile lines crossed since the earliest measurement 30 days to 6 months before. alerts lists the scores that crossed two or more lines (crossing-down, crossing-up) and the implausible values (flagged). With from, the measurements before it still count for the velocity and crossings of the points in range; points and alerts are those of the range.',
        'A child born preterm (gestationalAgeAtBirthWeeks under 37) is scored at the corrected age, as WHO and CDC practice does: chronological age less (40 weeks − gestational age at birth), that is correctedAgeDays = ageDays − (280 − (weeks × 7 + days)), days counting 0 when unknown. The correction stops at 24 months of chronological age (ageDays under 730.5, 24 × 30.4375, is corrected; from day 731 the age is chronological). Each point says which age its scores use (scoredAt) and answers correctedAgeDays (null when not corrected); ageDays and ageMonths are always chronological. A measurement before the term date (correctedAgeDays below 0) has every score null, since the references start at birth at term.',
        'The reference curves of /api/growth-standards are by age since birth at term: a chart draws a corrected point at correctedAgeDays and any other at ageDays.'
      ].join('\n\n'),
      params: GrowthParams, querystring: GrowthQuery, headers: ConditionalRead,
      response: {
        200: WithETag(Type.Ref('Growth'), CLOCK_ETAG),
        304: NotModified,
        ...errorResponses(400, 401, 403, 404),
        503: Type.Ref('Error', { description: 'WHO\'s growth tables are not installed (reference who or auto), or the database is unavailable' })
      }
    })
  }, async request => {
    const childId = request.params.childId
    const { from, to } = request.query
    // The trends of the first points in range compare them with measurements before it.
    const [child, measurements] = await Promise.all([
      growthChild(request.db, childId),
      growthMeasurements(request.db, childId, from ?? null, to ?? null, Math.ceil(CROSSING_MAX_DAYS))
    ])
    if (child === undefined) throw new errors.notFound('Child')
    const { tables, options } = fastify.growth.charts((request.query.reference as GrowthReference | undefined) ?? child.growthReference)
    const growth = childGrowth(tables, { id: childId, ...child }, measurements, options)
    if (from === undefined) return growth
    const points = growth.points.filter(point => point.measuredAt >= from)
    const shown = new Set(points.map(point => point.measurementId))
    return { ...growth, points, alerts: growth.alerts.filter(alert => shown.has(alert.measurementId)) }
  })
}

export default growth
