import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify'
import type { Db } from '../../db/client'
import { errors } from '../../lib/errors'
import { checkPasswordTurn, passwordKey, verifyPassword } from '../../io/passwords'
import { findCredentialsById } from '../../sql/users'

/**
 * The hooks of a route that checks the signed-in user's current password:
 * limited like a login, per client address before anything else,
 * authentication included, and per account right after it. The routes that
 * share one set of these hooks share their counts. Such a route lives outside
 * the authenticated scope so that its hooks run in that order. The account's
 * bucket is keyed by the user of an active session, read after the token's
 * signature and the session are checked: a forged or revoked token is a 401
 * and counts in no account's bucket, so nobody can spend another user's
 * requests.
 *
 * An account whose password checks already fill its share is refused before
 * the database is asked anything, by the account the token's signature
 * names: a flood of refusals then costs no query. Nothing is counted there,
 * so a token whose session has ended learns only that its account is busy.
 */
export function passwordChecks (fastify: FastifyInstance): onRequestHookHandler[] {
  async function refuseWhileBusy (request: FastifyRequest): Promise<void> {
    const userId = fastify.tokenSubject(request)
    if (userId !== null) checkPasswordTurn(passwordKey.user(userId))
  }
  return [
    fastify.authLimit('password-address', request => request.ip),
    refuseWhileBusy,
    fastify.authenticate,
    fastify.authLimit('password-account', request => String(request.user.id))
  ]
}

/**
 * Throws 403 WRONG_PASSWORD unless `password` is the user's. An account
 * without a password (made by signing in with the identity provider) throws
 * `withoutPassword`, by default that same 403.
 */
export async function proveCurrentPassword (
  db: Db, userId: number, password: string, withoutPassword: () => Error = () => new errors.wrongPassword()
): Promise<void> {
  const account = await findCredentialsById(db, userId)
  if (account === undefined) throw new errors.wrongPassword()
  if (account.passwordHash === null) throw withoutPassword()
  if (!(await verifyPassword(password, account.passwordHash, passwordKey.user(userId)))) throw new errors.wrongPassword()
}
