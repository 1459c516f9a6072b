import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import { errors } from '../../lib/errors'
import { errorResponses } from '../../lib/schemas'
import { checkPasswordTurn, hashPassword, passwordKey, verifyPassword } from '../../lib/passwords'
import { revokeUserSessions } from '../../sql/sessions'
import { findCredentialsById, setPasswordHash } from '../../sql/users'
import { PasswordBody } from './schemas'

/**
 * Changing one's password checks the current one, so it is limited like a
 * login: per client address before anything else, authentication included,
 * and per account right after it. It lives outside the authenticated scope
 * so that its hooks run in that order. The account's bucket is keyed by the
 * user of an active session, read after the token's signature and the
 * session are checked: a forged or revoked token is a 401 and counts in no
 * account's bucket, so nobody can spend another user's requests.
 *
 * An account whose password checks already fill its share is refused before
 * the database is asked anything, by the account the token's signature
 * names: a flood of refusals then costs no query. Nothing is counted there,
 * so a token whose session has ended learns only that its account is busy.
 */
const password: FastifyPluginAsyncTypebox = async function (fastify) {
  const { config, sql } = fastify

  async function refuseWhileBusy (request: FastifyRequest): Promise<void> {
    const userId = fastify.tokenSubject(request)
    if (userId !== null) checkPasswordTurn(passwordKey.user(userId))
  }

  fastify.post('/api/me/password', {
    // It waits on more than the database (password hashing): its key is not held in a transaction.
    config: { idempotency: 'apart', personalTokens: 'refused' },
    onRequest: [
      fastify.authLimit('password-address', request => request.ip),
      refuseWhileBusy,
      fastify.authenticate,
      fastify.authLimit('password-account', request => String(request.user.id))
    ],
    schema: {
      operationId: 'changePassword',
      tags: ['me'],
      summary: 'Change one\'s password',
      description: 'Every other session of the user is revoked. A wrong currentPassword is 403 WRONG_PASSWORD. ' +
        'Limited like a login: AUTH_RATE_LIMIT_MAX requests a window per client address (before authentication) and per account (after it), refused ones included; beyond, 429 with Retry-After. ' +
        'Passwords are checked in turns between accounts; an account with two checks waiting or running gets a 429 with Retry-After for a third.',
      security: [{ bearer: [] }],
      body: PasswordBody,
      response: { 204: Type.Null({ description: 'Changed' }), ...errorResponses(400, 401, 403, 429) }
    }
  }, async (request, reply) => {
    const { id, sessionId } = request.user
    const account = await findCredentialsById(sql, id)
    // An account made by signing in with the identity provider has no password to match.
    if (account?.passwordHash == null || !(await verifyPassword(request.body.currentPassword, account.passwordHash, passwordKey.user(id)))) {
      throw new errors.wrongPassword()
    }
    const passwordHash = await hashPassword(request.body.newPassword, config.bcryptCost, passwordKey.user(id))
    await sql.begin(async tx => {
      await setPasswordHash(tx, id, passwordHash)
      await revokeUserSessions(tx, id, sessionId)
    })
    return reply.code(204).send(null)
  })
}

export default password
