import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { noContent, operations } from '../../lib/schemas'
import { hashPassword, passwordKey } from '../../io/passwords'
import { revokeUserSessions } from '../../sql/sessions'
import { setPasswordHash } from '../../sql/users'
import identityLink from './identity-link'
import { passwordChecks, proveCurrentPassword } from './password-proof'
import { PasswordBody } from './schemas'

const operation = operations(['me'])

/**
 * The routes that check the current password: changing it, and linking an
 * identity of the identity provider. They are limited like a login
 * (./password-proof.ts), in the same counts.
 */
const password: FastifyPluginAsyncTypebox = async function (fastify) {
  const { config } = fastify
  const checks = passwordChecks(fastify)
  await fastify.register(identityLink, { checks })

  fastify.post('/api/me/password', {
    // It waits on more than the database (password hashing): its key is not held in a transaction.
    config: { idempotency: 'apart', personalTokens: 'refused' },
    onRequest: checks,
    schema: operation('changePassword', 'Change one\'s password', {
      description: 'Every other session of the user is revoked. A wrong currentPassword is 403 WRONG_PASSWORD. ' +
        'Limited like a login: AUTH_RATE_LIMIT_MAX requests a window per client address (before authentication) and per account (after it), refused ones included, counted with POST /api/me/identities/link; beyond, 429 with Retry-After. ' +
        'Passwords are checked in turns between accounts; an account with two checks waiting or running gets a 429 with Retry-After for a third.',
      body: PasswordBody,
      response: noContent('Changed', 400, 401, 403, 429)
    })
  }, async (request, reply) => {
    const { id, sessionId } = request.user
    // An account made by signing in with the identity provider has no password to match.
    await proveCurrentPassword(request.db, id, request.body.currentPassword)
    const passwordHash = await hashPassword(request.body.newPassword, config.bcryptCost, passwordKey.user(id))
    await request.db.begin(async tx => {
      await setPasswordHash(tx, id, passwordHash)
      await revokeUserSessions(tx, id, sessionId)
    })
    return reply.code(204).send(null)
  })
}

export default password
