import type { FastifyInstance } from 'fastify'
import { changedFields } from '../kinds/changes'
import type { ChangeKind } from '../kinds/changes'
import { CLOCK_ETAG, conditionalRead, operations } from '../lib/schemas'
import { historyOf } from '../sql/changes'
import { HistoryQuery, IdParams } from './changes/schemas'
import { pageOf } from './list'
import type { PageRequest } from '../sql/list'

export interface HistoryRoute {
  kind: ChangeKind
  path: string
  /** What the item is called in a 404. */
  name: string
  tag: string
  operationId: string
}

/**
 * `GET …/:id/history`: an item's changes, newest first, with the fields each
 * altered. Readable by any member of its family, also after the item was
 * deleted; an id that never existed is a 404.
 */
export function historyRoute (fastify: FastifyInstance, route: HistoryRoute): void {
  fastify.get(route.path, {
    preHandler: fastify.familyScope({ target: { history: route.kind, at: 'params.id' }, name: route.name, etag: 'family', cache: true }),
    schema: operations([route.tag])(route.operationId, `The changes of one ${route.name.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase()}, newest first`, {
      description: 'Each entry lists the fields the change altered, with their values before and after; also after the item was deleted.',
      params: IdParams, querystring: HistoryQuery,
      ...conditionalRead('HistoryEntryList', CLOCK_ETAG, 400, 401, 403, 404)
    })
  }, async request => {
    const { id } = request.params as { id: number }
    return await pageOf(request.query as PageRequest, async page => {
      const { rows, total } = await historyOf(request.db, route.kind, id, page)
      const entries = rows.map(entry => ({
        version: entry.version,
        op: entry.op,
        at: entry.at,
        user: entry.userId === null || entry.userName === null ? null : { id: entry.userId, name: entry.userName },
        fields: changedFields(route.kind, entry.previous, entry.record)
      }))
      return { rows: entries, total }
    })
  })
}
