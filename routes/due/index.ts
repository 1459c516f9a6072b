import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { utcToday } from '../../lib/days'
import { CLOCK_ETAG, ConditionalRead, NotModified, WithETag, errorResponses } from '../../lib/schemas'
import { dueVaccines } from '../../sql/medical-events'
import { DueParams, DueQuery } from './schemas'

const DESCRIPTION = 'For each vaccine of the child (names compared case-insensitively after trimming), its latest dose: ' +
  'the latest date, then the latest created. When that dose has a nextDueDate, the vaccine is listed; a latest dose without one ' +
  'takes the vaccine off the list. Ordered by due date, so the overdue ones (due before today, UTC) come first, oldest first, ' +
  'then the upcoming ones; ties by name. Overdue and daysUntilDue count from today in UTC, and the ETag changes with the day too.'

/** A child's vaccines whose next dose is due, from the latest dose of each. */
const due: FastifyPluginAsyncTypebox = async function (fastify) {
  const { sql } = fastify

  fastify.get('/api/children/:childId/due', {
    preHandler: fastify.familyScope({ target: { child: 'params.childId' }, name: 'Child', etag: 'child', daily: true, cache: true }),
    schema: {
      operationId: 'listChildDueVaccines',
      tags: ['medical-events'],
      summary: 'A child\'s vaccines whose next dose is due, overdue ones first',
      description: DESCRIPTION,
      security: [{ bearer: [] }],
      params: DueParams,
      querystring: DueQuery,
      headers: ConditionalRead,
      response: { 200: WithETag(Type.Ref('DueVaccineList'), CLOCK_ETAG), 304: NotModified, ...errorResponses(400, 401, 403, 404) }
    }
  }, async request => {
    const { limit, offset } = request.query
    const { rows, total } = await dueVaccines(sql, request.params.childId, utcToday(), limit, offset)
    return { data: rows, meta: { total, limit, offset } }
  })
}

export default due
