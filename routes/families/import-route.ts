import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import multipart from '@fastify/multipart'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from '@sinclair/typebox'
import { errors } from '../../lib/errors'
import { ExportSlots } from '../../lib/export/slots'
import { QueueFull } from '../../lib/fair-queue'
import { errorResponses, StrictObject, operations } from '../../lib/schemas'
import { ALWAYS_LISTED, MAX_ENTRIES, MAX_RATIO } from '../../domain/archive-import/limits'
import { recordKinds } from '../../kinds'
import { nounOf } from '../../kinds/kind'

const operation = operations(['families'])

/** The import itself, loaded at its first use. */
const archiveImport = (): typeof import('../../domain/archive-import') => require('../../domain/archive-import')

/** When a client that found every import slot taken may try again, in seconds. */
const RETRY_AFTER = 30
/** When a client whose images fill their share of the image pool may try again, in seconds. */
const IMAGE_RETRY_AFTER = 5

const ImportBody = StrictObject({
  file: Type.String({ format: 'binary', description: 'a ZIP archive as GET /api/families/{id}/export writes it, at most MAX_IMPORT_SIZE bytes' })
})

const Imported = Type.Object({
  family: Type.Ref('Family'),
  counts: Type.Object({
    children: Type.Integer(),
    // Each kind's records, in the registry's order; archives written before a kind existed have none of it.
    ...Object.fromEntries(recordKinds.map(({ key, spec }) => [key, ALWAYS_LISTED.includes(key)
      ? Type.Integer()
      : Type.Integer({ description: `${nounOf(spec)}s; 0 for an archive written before they existed` })])),
    attachments: Type.Integer(),
    files: Type.Integer({ description: 'attachments and avatars stored' })
  })
}, { $id: 'FamilyImport', title: 'FamilyImport' })

const DESCRIPTION = [
  'Creates a new family owned by the caller with every child, record, link, attachment and avatar of the archive (new ids, links kept; members of the exported family are not carried over).',
  `The archive is checked whole before anything is written: every file's SHA-256 against the manifest, entry names (only those an export writes), at most ${MAX_ENTRIES} entries, at most ${MAX_RATIO} × its size unpacked, a schema version no newer than this service's, and every record by the rules of its POST.`,
  'Any problem is a 400 INVALID_ARCHIVE naming the first one found, with nothing written. Attachments whose files the export had listed as missing are left out.',
  'manifest.json and family.json are read as streams, a record at a time, with every value bounded: a document of the wrong shape is refused at its first wrong token, and memory follows one record, not the document. Each kind\'s records are written in their order in the archive, so records with equal sort values read back in the same order.',
  'Files obey the upload rules: an avatar is re-encoded (WebP, at most 512 × 512, no metadata, its first frame only), and an attachment\'s type is decided from its bytes, among the types an upload accepts; any other file is a 400 INVALID_ARCHIVE naming it.',
  'Avatars are decoded in the caller\'s share of the image pool, as uploaded ones are: while two images of the caller wait there, 429 with Retry-After.',
  'A user may have one import open at once, from the first byte of its upload to the answer: a second is 429 with Retry-After before its upload is read.',
  'Once the upload has arrived whole (to disk, at most MAX_IMPORT_SIZE bytes), the import takes one of two slots shared by every user; when both run, 429 with Retry-After.',
  'Like every request body, the upload must arrive within 60 s, and it must keep UPLOAD_MIN_RATE (default 10240 bytes a second) over each UPLOAD_RATE_WINDOW (default 10 s, the first one a grace): a slower upload is ended with 408 REQUEST_TIMEOUT and nothing is kept of it.'
].join(' ')

/** The archive import, in a scope of its own: only here is a ZIP accepted. */
const importRoute: FastifyPluginAsyncTypebox = async function (fastify) {
  const { config, sql } = fastify
  const open = new ExportSlots(Infinity, 1)
  const running = new ExportSlots(2, 1)
  const upload = fastify.uploadHooks('archive')
  await fastify.register(multipart)
  fastify.addSchema(Imported)

  function take (slots: ExportSlots, request: FastifyRequest, reply: FastifyReply, message: string): void {
    const release = slots.take(request.user.id)
    if (release === null) {
      reply.header('retry-after', String(RETRY_AFTER))
      throw new errors.rateLimited(`${message}; retry in ${RETRY_AFTER} seconds`)
    }
    reply.raw.once('close', release)
  }

  /** Before the upload is read: one import of a user at a time, which refuses no one else. */
  async function holdOpen (request: FastifyRequest, reply: FastifyReply): Promise<void> {
    take(open, request, reply, 'An import of yours is already open')
  }

  /** Once the upload is whole on disk: an import slot, given back when the answer is sent. */
  async function takeSlot (request: FastifyRequest, reply: FastifyReply): Promise<void> {
    take(running, request, reply, 'Two imports are already running')
  }

  fastify.post('/api/families/import', {
    // The import commits on connections of its own: its key's answer is kept just after.
    config: { idempotency: 'apart', personalTokens: 'unbound' },
    preValidation: [holdOpen, upload.preValidation, takeSlot],
    onSend: upload.onSend,
    schema: operation('importFamily', 'Import a family archive as a new family of the caller', {
      description: DESCRIPTION,
      consumes: ['multipart/form-data'], body: ImportBody,
      response: { 201: Type.Ref('FamilyImport'), 408: Type.Ref('Error', { description: 'The upload came slower than UPLOAD_MIN_RATE' }), ...errorResponses(400, 401, 403, 413, 415, 429) }
    })
  }, async (request, reply) => {
    const file = request.upload
    if (file === null) throw new errors.invalidBody('The file is missing: send it in the field file')
    try {
      const { family, counts } = await archiveImport().importArchive(sql, file.path, request.user.id, request.user.id, config)
      return await reply.code(201).header('location', `/api/families/${family.id}`).send({ family, counts })
    } catch (error) {
      if (error instanceof archiveImport().ArchiveProblem) throw new errors.invalidArchive(`The archive cannot be imported: ${error.message}`)
      if (error instanceof QueueFull) {
        reply.header('retry-after', String(IMAGE_RETRY_AFTER))
        throw new errors.rateLimited(`Too many images of yours are being processed; retry in ${IMAGE_RETRY_AFTER} seconds`)
      }
      throw error
    }
  })
}

export default importRoute
