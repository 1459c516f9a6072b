import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errors, found } from '../../lib/errors'
import { CLOCK_ETAG, ConditionalWrite, ITEM_ETAG, conditionalRead, noContent, operations } from '../../lib/schemas'
import { removeWhenCommitted } from '../../domain/stored-files'
import { preconditionFailed } from '../../plugins/access'
import { attachmentSorts, deleteAttachment, findAttachment, listAttachments } from '../../sql/attachments'
import { beginChange } from '../../sql/changes'
import { orderBy } from '../../sql/list'
import { recordVersion } from '../../sql/records'
import { historyRoute } from '../history'
import { AttachmentListQuery, AttachmentParams, ChildParams } from './schemas'
import upload from './upload'
import { pageOf } from '../list'

const attachments: FastifyPluginAsyncTypebox = async function (fastify) {
  const { config } = fastify
  const tags = ['attachments']
  const operation = operations(tags)
  const attachment = fastify.familyScope({ target: { record: 'attachments', at: 'params.id' }, name: 'Attachment', etag: 'version', ifMatch: true, cache: true })

  fastify.get('/api/children/:childId/attachments', {
    preHandler: fastify.familyScope({ target: { child: 'params.childId' }, name: 'Child', etag: 'child', cache: true }),
    schema: operation('listChildAttachments', 'A child\'s attachments, optionally those linked to one visit, measurement or illness', {
      params: ChildParams, querystring: AttachmentListQuery,
      ...conditionalRead('AttachmentList', CLOCK_ETAG, 400, 401, 403, 404)
    })
  }, async request => {
    const { sort = '-createdAt', visitId, measurementId, illnessId } = request.query
    const order = orderBy(request.db, sort, attachmentSorts)
    const links = { visitId, measurementId, illnessId }
    return await pageOf(request.query, page => listAttachments(request.db, request.scope.childId as number, links, order, page))
  })

  fastify.get('/api/attachments/:id', {
    preHandler: attachment,
    schema: operation('getAttachment', 'One attachment', { params: AttachmentParams, ...conditionalRead('Attachment', ITEM_ETAG, 400, 401, 403, 404) })
  }, async request => found(await findAttachment(request.db, request.params.id), 'Attachment'))

  fastify.delete('/api/attachments/:id', {
    preHandler: attachment,
    schema: operation('deleteAttachment', 'Delete an attachment and its file', { params: AttachmentParams, headers: ConditionalWrite, response: noContent('Deleted', 400, 401, 403, 404, 412) })
  }, async (request, reply) => {
    const id = request.params.id
    const storedName = await request.db.begin(async tx => {
      await beginChange(tx, request.scope.familyId, request.user.id)
      const deleted = await deleteAttachment(tx, id, request.scope.expectedVersion)
      if (deleted !== undefined) return deleted
      const version = await recordVersion(tx, 'attachments', id)
      if (version === undefined) throw new errors.notFound('Attachment')
      throw preconditionFailed(version)
    })
    await removeWhenCommitted(request, config, { attachments: [storedName] }, 'the file of a deleted attachment could not be removed')
    return reply.code(204).send(null)
  })

  historyRoute(fastify, { kind: 'attachment', path: '/api/attachments/:id/history', name: 'Attachment', tag: 'attachments', operationId: 'getAttachmentHistory' })

  await fastify.register(upload)
}

export default attachments
