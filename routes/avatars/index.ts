import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { noContent, operations } from '../../lib/schemas'
import { removeWhenCommitted } from '../../domain/stored-files'
import { beginChange } from '../../sql/changes'
import { removeAvatar } from '../../sql/children'
import { AvatarParams } from './schemas'
import upload from './upload'

const operation = operations(['children'])

/** A child's avatar: set by upload, removed on request; the file goes after the commit. */
const avatars: FastifyPluginAsyncTypebox = async function (fastify) {
  const { config } = fastify

  fastify.delete('/api/children/:id/avatar', {
    preHandler: fastify.familyScope({ target: { child: 'params.id' }, name: 'Child' }),
    schema: operation('deleteChildAvatar', 'Remove a child\'s avatar; answers 204 also when there is none', { params: AvatarParams, response: noContent('Deleted', 400, 401, 403, 404) })
  }, async (request, reply) => {
    const previous = await request.db.begin(async tx => {
      await beginChange(tx, request.scope.familyId, request.user.id)
      return removeAvatar(tx, request.params.id)
    })
    if (previous !== null) {
      await removeWhenCommitted(request, config, { avatars: [previous] }, 'a removed avatar\'s file could not be deleted')
    }
    return reply.code(204).send(null)
  })

  await fastify.register(upload)
}

export default avatars
