import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import multipart from '@fastify/multipart'
import { Type } from '@sinclair/typebox'
import { errors, withDetails } from '../../lib/errors'
import { storedName } from '../../lib/files/names'
import { storeFile } from '../../io/files/store'
import { errorResponses, operations } from '../../lib/schemas'
import { foreignLinks, insertAttachment, type AttachmentLinks } from '../../sql/attachments'
import type { AttachmentLink } from '../../lib/attachment-links'
import { beginChange } from '../../sql/changes'
import { ChildParams, UploadAttachmentBody } from './schemas'

const operation = operations(['attachments'])

const RECORD_NAMES: Record<AttachmentLink, string> = { visitId: 'visit', measurementId: 'measurement', illnessId: 'illness' }

/** The upload route, in a scope of its own: only here is a multipart body accepted. */
const upload: FastifyPluginAsyncTypebox = async function (fastify) {
  const { config } = fastify
  await fastify.register(multipart)

  fastify.post('/api/children/:childId/attachments', {
    // It waits on more than the database (the upload's checks and files): its key is not held in a transaction.
    config: { idempotency: 'apart' },
    ...fastify.uploadHooks('attachment'),
    preHandler: fastify.familyScope({ target: { child: 'params.childId' }, name: 'Child' }),
    schema: operation('uploadAttachment', 'Upload a file for a child, optionally linked to one of its visits, measurements or illnesses', {
      description: 'The type is decided from the file\'s bytes: JPEG, PNG, WebP, GIF, HEIC or PDF; anything else is a 415, a file over MAX_FILE_SIZE a 413.',
      consumes: ['multipart/form-data'], params: ChildParams, body: UploadAttachmentBody,
      response: { 201: Type.Ref('Attachment'), ...errorResponses(400, 401, 403, 404, 413, 415) }
    })
  }, async (request, reply) => {
    const file = request.upload
    if (file === null) throw new errors.invalidBody('The file is missing: send it in the field file')
    const childId = request.scope.childId as number
    const { visitId, measurementId, illnessId } = request.body
    const links: AttachmentLinks = { visitId, measurementId, illnessId }
    const wrong = await foreignLinks(request.db, childId, links)
    if (wrong.length > 0) {
      throw withDetails(new errors.validation('The request is not valid'), {
        issues: wrong.map(field => ({ path: `/body/${field}`, message: `must be a ${RECORD_NAMES[field]} of the same child` }))
      })
    }
    const name = storedName(file.type.ext)
    const created = await storeFile(file.path, config.uploadDir, name, () => request.db.begin(async tx => {
      await beginChange(tx, request.scope.familyId, request.user.id)
      return insertAttachment(tx, childId, {
        ...links,
        fileName: file.fileName,
        storedName: name,
        contentType: file.type.contentType,
        sizeBytes: file.size
      })
    }))
    return reply.code(201).header('location', `/api/attachments/${created.id}`).send(created)
  })
}

export default upload
