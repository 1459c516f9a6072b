import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { errors } from '../../lib/errors'
import { errorResponses } from '../../lib/schemas'
import { removeStoredFiles } from '../../lib/stored-files'
import { attachmentSorts, deleteAttachment, findAttachment, listAttachments } from '../../sql/attachments'
import { orderBy } from '../../sql/list'
import { AttachmentListQuery, AttachmentParams, ChildParams } from './schemas'
import upload from './upload'

const attachments: FastifyPluginAsyncTypebox = async function (fastify) {
  const { config, sql } = fastify
  const tags = ['attachments']
  const security = [{ bearer: [] }]
  const attachment = fastify.familyScope({ target: { record: 'attachments', at: 'params.id' }, name: 'Attachment' })

  fastify.get('/api/children/:childId/attachments', {
    preHandler: fastify.familyScope({ target: { child: 'params.childId' }, name: 'Child' }),
    schema: {
      operationId: 'listChildAttachments',
      tags,
      summary: 'A child\'s attachments, optionally those linked to one visit, measurement or illness',
      security,
      params: ChildParams,
      querystring: AttachmentListQuery,
      response: { 200: Type.Ref('AttachmentList'), ...errorResponses(400, 401, 403, 404) }
    }
  }, async request => {
    const { limit = 50, offset = 0, sort = '-createdAt', visitId, measurementId, illnessId } = request.query
    const order = orderBy(sql, sort, attachmentSorts)
    const links = { visitId, measurementId, illnessId }
    const { rows, total } = await listAttachments(sql, request.scope.childId as number, links, order, limit, offset)
    return { data: rows, meta: { total, limit, offset } }
  })

  fastify.get('/api/attachments/:id', {
    preHandler: attachment,
    schema: {
      operationId: 'getAttachment',
      tags,
      summary: 'One attachment',
      security,
      params: AttachmentParams,
      response: { 200: Type.Ref('Attachment'), ...errorResponses(400, 401, 403, 404) }
    }
  }, async request => {
    const found = await findAttachment(sql, request.params.id)
    if (found === undefined) throw new errors.notFound('Attachment')
    return found
  })

  fastify.delete('/api/attachments/:id', {
    preHandler: attachment,
    schema: {
      operationId: 'deleteAttachment',
      tags,
      summary: 'Delete an attachment and its file',
      security,
      params: AttachmentParams,
      response: { 204: Type.Null({ description: 'Deleted' }), ...errorResponses(400, 401, 403, 404) }
    }
  }, async (request, reply) => {
    const storedName = await sql.begin(tx => deleteAttachment(tx, request.params.id))
    if (storedName === undefined) throw new errors.notFound('Attachment')
    const left = await removeStoredFiles(config, { attachments: [storedName] })
    if (left.length > 0) request.log.warn({ files: left }, 'the file of a deleted attachment could not be removed')
    return reply.code(204).send(null)
  })

  await fastify.register(upload)
}

export default attachments
