import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fastifyStatic from '@fastify/static'
import { Type } from '@sinclair/typebox'
import { stat } from 'node:fs/promises'
import path from 'node:path'
import { errors } from '../../lib/errors'
import { AVATARS_PATH, UPLOADS_PATH, isServableName } from '../../lib/files/names'
import { ATTACHMENT_TYPES } from '../../io/files/types'
import { errorResponses } from '../../lib/schemas'
import { inlineDisposition } from '../../lib/export/file-names'
import { uploadedName } from '../../sql/attachments'

const CACHE_CONTROL = 'private, max-age=31536000, immutable'

/** Nothing in a stored file runs on the service's origin: no script, no plugin, no form, no fetch. */
const SANDBOX = "default-src 'none'; sandbox"

const Binary = { schema: Type.String({ format: 'binary' }) }

interface FileRoutes {
  dir: string
  operationId: string
  summary: string
  types: readonly string[]
  /** The name a download is saved under, by the stored name. */
  nameOf: (storedName: string) => Promise<string>
}

/**
 * One directory of stored files under its prefix. Anything under the prefix
 * that is not a stored file, a path that leaves the directory included, is a
 * 404 NOT_FOUND; there are no listings.
 */
const fileRoutes: FastifyPluginAsyncTypebox<FileRoutes> = async function (fastify, options) {
  const crossOrigin = fastify.config.corsOrigins.length > 0

  fastify.addHook('onRequest', async (_request, reply) => {
    reply.header('content-security-policy', SANDBOX)
  })

  fastify.setNotFoundHandler(async () => {
    throw new errors.notFound('File')
  })

  fastify.get('/:name', {
    schema: {
      operationId: options.operationId,
      tags: ['files'],
      summary: options.summary,
      description: 'A capability link: no token is needed. Served with the type detected at upload, cached as immutable, with `Content-Disposition: inline` naming the file as it was uploaded, and in a sandbox (`Content-Security-Policy: default-src \'none\'; sandbox`): nothing in the file runs on the service\'s origin.',
      security: [],
      params: Type.Object({ name: Type.String({ description: 'the stored name' }) }),
      response: {
        200: { description: 'The file', content: Object.fromEntries(options.types.map(type => [type, Binary])) },
        ...errorResponses(404)
      }
    }
  }, async (request, reply) => {
    const { name } = request.params
    if (!isServableName(name)) throw new errors.notFound('File')
    const info = await stat(path.join(options.dir, name)).catch(() => undefined)
    if (info === undefined || !info.isFile()) throw new errors.notFound('File')
    reply.header('cache-control', CACHE_CONTROL)
    reply.header('content-disposition', inlineDisposition(await options.nameOf(name)))
    if (crossOrigin) reply.header('cross-origin-resource-policy', 'cross-origin')
    return reply.sendFile(name, options.dir, { cacheControl: false, dotfiles: 'deny', index: false })
  })
}

/** The stored files, public by their unguessable names: attachments under /uploads, avatars under /avatars. */
const staticFiles: FastifyPluginAsyncTypebox = async function (fastify) {
  const { config } = fastify
  await fastify.register(fastifyStatic, { serve: false })
  await fastify.register(fileRoutes, {
    prefix: UPLOADS_PATH,
    dir: config.uploadDir,
    operationId: 'getUpload',
    summary: 'An attachment\'s file',
    types: ATTACHMENT_TYPES,
    nameOf: async name => await uploadedName(fastify.sql, name) ?? name
  })
  await fastify.register(fileRoutes, {
    prefix: AVATARS_PATH,
    dir: config.avatarDir,
    operationId: 'getAvatar',
    summary: 'A child\'s avatar',
    types: ['image/webp'],
    nameOf: async () => 'avatar.webp'
  })
}

export default staticFiles
