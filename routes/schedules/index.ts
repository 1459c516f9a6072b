import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { errorResponses, operations } from '../../lib/schemas'
import { schedules } from '../../io/schedules'
import { ScheduleListQuery } from './schemas'
import { pageOf } from '../list'
import { pageOfAll } from '../../sql/list'

const operation = operations(['schedules'])

const DESCRIPTION = 'The vaccine schedules the service ships as data, in the list envelope, each with its source, its notes and every series with its doses: ' +
  'the recommended age, the on-time age range (from the day the child reaches `from` through `to`, inclusive: to 15 months lasts until the day before the child is 16 months old) ' +
  'and the minimum interval to the next dose. A child follows one by its `scheduleId`; its vaccine records name a series by `vaccine`. ' +
  '`us-routine` is CDC\'s Child and Adolescent Immunization Schedule by Age (birth to 18 years), routine recommendations only: ' +
  'annual influenza, COVID-19 and the vaccines of special situations are not in it. The same for every signed-in user.'

/** The vaccine schedules the service ships: data of the build, the same for everyone. */
const vaccineSchedules: FastifyPluginAsyncTypebox = async function (fastify) {
  fastify.get('/api/schedules', {
    schema: operation('listVaccineSchedules', 'The vaccine schedules a child may follow, with their series and doses', {
      description: DESCRIPTION,
      querystring: ScheduleListQuery,
      response: { 200: Type.Ref('VaccineScheduleList'), ...errorResponses(400, 401, 403) }
    })
  }, async request => {
    return await pageOf(request.query, async page => pageOfAll(schedules(), page))
  })
}

export default vaccineSchedules
