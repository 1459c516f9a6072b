import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import multipart from '@fastify/multipart'
import { errors } from '../../lib/errors'
import { QueueFull } from '../../lib/fair-queue'
import { encodeAvatar, IMAGE_JOBS_PER_KEY } from '../../io/files/avatar'
import { avatarUrl, storedName } from '../../lib/files/names'
import { storeFile } from '../../io/files/store'
import type { Upload } from '../../io/files/upload'
import { errorResponses, operations } from '../../lib/schemas'
import { removeWhenCommitted } from '../../domain/stored-files'
import { beginChange } from '../../sql/changes'
import { replaceAvatar } from '../../sql/children'
import { Avatar, AvatarParams, UploadAvatarBody } from './schemas'

const operation = operations(['children'])

/** When a user whose images fill their share of the image pool may try again, in seconds. */
const RETRY_AFTER = 5

/**
 * The avatar upload, in a scope of its own: only here is a multipart body
 * accepted. The image is decoded once the caller may set the avatar, in the
 * image pool under the caller's turn, and kept re-encoded as WebP of at most
 * 512 × 512 without any of the original's metadata; the avatar it replaces
 * goes after the commit.
 */
const upload: FastifyPluginAsyncTypebox = async function (fastify) {
  const { config } = fastify
  await fastify.register(multipart)

  fastify.post('/api/children/:id/avatar', {
    // It waits on more than the database (the upload's checks and files): its key is not held in a transaction.
    config: { idempotency: 'apart' },
    ...fastify.uploadHooks('avatar'),
    preHandler: fastify.familyScope({ target: { child: 'params.id' }, name: 'Child' }),
    schema: operation('uploadChildAvatar', 'Set or replace a child\'s avatar', {
      description: 'JPEG, PNG or WebP, decided from the file\'s bytes; anything else is a 415, a file over MAX_FILE_SIZE a 413. ' +
        'An image whose frame has more than IMAGE_MAX_PIXELS pixels (default 40,000,000), read from its header, is a 415 before it is decoded; of an animated image only the first frame is kept. ' +
        `Images are decoded a few at a time, in turns between users; a user may have ${IMAGE_JOBS_PER_KEY} waiting or in work at once, and one more is a 429 with Retry-After. ` +
        'The avatar is kept as WebP of at most 512 × 512 with no metadata.',
      consumes: ['multipart/form-data'], params: AvatarParams, body: UploadAvatarBody,
      response: { 200: Avatar, ...errorResponses(400, 401, 403, 404, 413, 415, 429) }
    })
  }, async (request, reply) => {
    const received = request.upload
    if (received === null) throw new errors.invalidBody('The file is missing: send it in the field file')
    let file: Upload
    try {
      file = await encodeAvatar(received, `user:${request.user.id}`, config.imageMaxPixels)
    } catch (error) {
      if (!(error instanceof QueueFull)) throw error
      reply.header('retry-after', String(RETRY_AFTER))
      throw new errors.rateLimited(`Too many images of yours are being processed; retry in ${RETRY_AFTER} seconds`)
    }
    request.upload = file
    const name = storedName(file.type.ext)
    const replaced = await storeFile(file.path, config.avatarDir, name, () => request.db.begin(async tx => {
      await beginChange(tx, request.scope.familyId, request.user.id)
      const row = await replaceAvatar(tx, request.params.id, name, file.size)
      if (row === undefined) throw new errors.notFound('Child')
      return row
    }))
    if (replaced.previous !== null) {
      await removeWhenCommitted(request, config, { avatars: [replaced.previous] }, 'a replaced avatar\'s file could not be deleted')
    }
    return { avatarUrl: avatarUrl(name) }
  })
}

export default upload
