import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Tx } from '../../db/client'
import type { TokenPair } from '../../plugins/tokens'
import { createSession } from '../../sql/sessions'
import { recordLogin, type User } from '../../sql/users'

/**
 * A new session of a user who has just signed in (registration, password,
 * identity provider), in the transaction of the sign-in: its token pair,
 * with the user, as the auth routes answer it.
 */
export async function startSession (fastify: FastifyInstance, tx: Tx, request: FastifyRequest, user: User): Promise<TokenPair & { user: User }> {
  const { config, tokens } = fastify
  await recordLogin(tx, user.id)
  const sessionId = await createSession(tx, user.id, request.headers['user-agent']?.slice(0, 500) ?? null, config.refreshTokenTtl)
  return { ...(await tokens.issue(tx, user, sessionId, null)), user }
}
