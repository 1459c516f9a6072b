import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { utcToday } from '../../lib/days'
import { CLOCK_ETAG, conditionalRead, operations } from '../../lib/schemas'
import { dueVaccines } from '../../sql/medical-events'
import { DueParams, DueQuery } from './schemas'
import { pageOf } from '../list'

const operation = operations(['medical-events'])

const DESCRIPTION = 'Two sources of items, told apart by `source`. ' +
  '`nextDueDate`: for each vaccine of the child (names compared case-insensitively after trimming), its latest dose, the latest date, then the latest created; ' +
  'when that dose has a nextDueDate, the vaccine is listed, due from and by that day; a latest dose without one takes the vaccine off the list. ' +
  '`schedule`: when the child follows a vaccine schedule (scheduleId, GET /api/schedules), every dose of it not yet recorded. ' +
  'A dose is recorded by a vaccine record of the child with that `vaccine` (series code) and `doseNumber`; a record with the vaccine and no doseNumber counts, in date order, ' +
  'for the lowest dose of the series that no record names; a doseNumber beyond the series counts for nothing; records whose vaccine is not a series of the schedule count for nothing. ' +
  'dueFrom is the day the child reaches the start of the dose\'s on-time range (ages counted by the calendar from the date of birth) or, when the series\' previous dose is recorded, ' +
  'that dose\'s date plus the schedule\'s minimum interval, if later; dueBy is the last day of the range (through its end: 12–15 months lasts until the day before 16 months), never before dueFrom. ' +
  'Doses whose range has passed (catch-up doses) are overdue. A series whose doses are all recorded does not appear. ' +
  'status: upcoming before dueFrom, due from dueFrom through dueBy, overdue after dueBy, today in UTC. ' +
  'Order: overdue items first, then by dueFrom, then vaccine code and dose number (items without them after), then name. ' +
  'Older clients read dueDate (= dueFrom), overdue, daysUntilDue and lastDose as before; lastDose is null for a schedule dose of a series with nothing recorded, ' +
  'and schedule items appear only for a child whose scheduleId a client has set. ' +
  'The ETag follows the child\'s changes and the day.'

/** A child's vaccine doses due: from the latest dose of each vaccine, and from the child's schedule. */
const due: FastifyPluginAsyncTypebox = async function (fastify) {

  fastify.get('/api/children/:childId/due', {
    preHandler: fastify.familyScope({ target: { child: 'params.childId' }, name: 'Child', etag: 'child', daily: true, cache: true }),
    schema: operation('listChildDueVaccines', 'A child\'s vaccine doses due: next due dates and the schedule\'s doses not yet recorded, overdue ones first', {
      description: DESCRIPTION,
      params: DueParams, querystring: DueQuery,
      ...conditionalRead('DueVaccineList', CLOCK_ETAG, 400, 401, 403, 404)
    })
  }, async request => {
    return await pageOf(request.query, page => dueVaccines(request.db, request.params.childId, utcToday(), page))
  })
}

export default due
