import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import multipart from '@fastify/multipart'
import { errors } from '../../lib/errors'
import { storedName } from '../../lib/files/names'
import { storeFile } from '../../lib/files/store'
import { errorResponses } from '../../lib/schemas'
import { removeStoredFiles } from '../../lib/stored-files'
import { beginChange } from '../../sql/changes'
import { replaceAvatar } from '../../sql/children'
import { Avatar, AvatarParams, UploadAvatarBody } from './schemas'

/**
 * The avatar upload, in a scope of its own: only here is a multipart body
 * accepted. The image is kept re-encoded as WebP of at most 512 × 512 without
 * any of the original's metadata; the avatar it replaces goes after the commit.
 */
const upload: FastifyPluginAsyncTypebox = async function (fastify) {
  const { config, sql } = fastify
  await fastify.register(multipart)

  fastify.post('/api/children/:id/avatar', {
    ...fastify.uploadHooks('avatar'),
    preHandler: fastify.familyScope({ target: { child: 'params.id' }, name: 'Child' }),
    schema: {
      operationId: 'uploadChildAvatar',
      tags: ['children'],
      summary: 'Set or replace a child\'s avatar',
      description: 'JPEG, PNG or WebP, decided from the file\'s bytes; anything else is a 415, a file over MAX_FILE_SIZE a 413. The avatar is kept as WebP of at most 512 × 512 with no metadata.',
      security: [{ bearer: [] }],
      consumes: ['multipart/form-data'],
      params: AvatarParams,
      body: UploadAvatarBody,
      response: { 200: Avatar, ...errorResponses(400, 401, 403, 404, 413, 415) }
    }
  }, async request => {
    const file = request.upload
    if (file === null) throw new errors.invalidBody('The file is missing: send it in the field file')
    const name = storedName(file.type.ext)
    const replaced = await storeFile(file.path, config.avatarDir, name, () => sql.begin(async tx => {
      await beginChange(tx, request.scope.familyId, request.user.id)
      const row = await replaceAvatar(tx, request.params.id, name, file.size)
      if (row === undefined) throw new errors.notFound('Child')
      return row
    }))
    if (replaced.previous !== null) {
      const left = await removeStoredFiles(config, { avatars: [replaced.previous] })
      if (left.length > 0) request.log.warn({ files: left }, 'a replaced avatar\'s file could not be deleted')
    }
    return { avatarUrl: `/avatars/${name}` }
  })
}

export default upload
