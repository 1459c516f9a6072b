import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { decodeCursor, encodeCursor, presentChange, START, type Position } from '../../kinds/changes'
import { errors, withDetails } from '../../lib/errors'
import { CLOCK_ETAG, conditionalRead, operations } from '../../lib/schemas'
import { changesAfter, familyClock } from '../../sql/changes'
import { ChangesQuery, IdParams } from './schemas'

const operation = operations(['changes'])

function badCursor (message: string): Error {
  return withDetails(new errors.validation('The request is not valid'), { issues: [{ path: '/query/since', message }] })
}

/**
 * Delta sync: a family's changes after a cursor, oldest first. A client that
 * keeps `nextCursor` and asks again gets every later change exactly once:
 * a change is served only once every transaction older than its own has
 * ended, so none can later appear before a cursor already handed out.
 */
const changes: FastifyPluginAsyncTypebox = async function (fastify) {

  fastify.get('/api/families/:id/changes', {
    preHandler: fastify.familyScope({ target: { family: 'params.id' }, etag: 'family' }),
    schema: operation('listFamilyChanges', 'A family\'s changes after a cursor, oldest first', {
      description: 'Without `since`, from the first change. A cursor is refused (400) when it is malformed, of another family, or from before the family\'s data was restored; then read again without `since`.',
      params: IdParams, querystring: ChangesQuery,
      ...conditionalRead('ChangeFeed', CLOCK_ETAG, 400, 401, 403, 404)
    })
  }, async request => {
    const familyId = request.scope.familyId
    const { since } = request.query
    // The validator fills in the schema's default.
    const limit = request.query.limit as number
    const clock = await familyClock(request.db, familyId)
    if (clock === undefined) throw new errors.notFound('Family')
    let after: Position = START
    if (since !== undefined) {
      const cursor = decodeCursor(since)
      if (cursor === null) throw badCursor('is not a cursor of this service')
      if (cursor.familyId !== familyId) throw badCursor('is a cursor of another family')
      if (cursor.epoch !== clock.epoch) throw badCursor('is from before the family\'s data was restored: read the changes again without since')
      after = { xid: cursor.xid, seq: cursor.seq }
    }
    const rows = await changesAfter(request.db, familyId, after, limit + 1)
    const data = rows.slice(0, limit).map(row => presentChange(row, clock.epoch, request.scope.role))
    return {
      data,
      meta: {
        limit,
        nextCursor: data.length > 0 ? data[data.length - 1].cursor : encodeCursor({ familyId, epoch: clock.epoch, ...after }),
        hasMore: rows.length > limit
      }
    }
  })
}

export default changes
