import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type Static } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import { LOCKS, lockForTransaction } from '../../db/locks'
import { errors } from '../../lib/errors'
import { errorResponses, noContent, operations, BEARER } from '../../lib/schemas'
import { dummyHash, hashPassword, passwordKey, verifyPassword } from '../../io/passwords'
import { openAccount } from '../../domain/accounts'
import { findOpenInvite, useInvite } from '../../sql/invites'
import { passwordStillAllowed } from '../../sql/oidc'
import { lockRefreshToken, markRotated, revokeSession } from '../../sql/sessions'
import { anyUserExists, emailTaken, findCredentials, findCredentialsById } from '../../sql/users'
import oidc from './oidc'
import { startSession } from './session'
import { LoginBody, LogoutBody, RefreshBody, RegisterBody } from './schemas'

const operation = operations(['auth'], [])

/** The account a login tries: its e-mail, lower-cased as e-mails are compared. */
function loginAccount (request: FastifyRequest): string {
  return (request.body as Static<typeof LoginBody>).email.toLowerCase()
}

const auth: FastifyPluginAsyncTypebox = async function (fastify) {
  const { config, tokens } = fastify
  const rateLimit = { rateLimit: {} }
  await fastify.register(oidc)

  fastify.post('/api/auth/register', {
    config: rateLimit,
    schema: operation('register', 'Create an account and sign in', {
      description: 'The first user becomes admin. Later users need an invite unless REGISTRATION is open; without an invite a family named after the user is created. ' +
        'An invite must name the e-mail registered, and counts only while the owner who made it is still an owner of the family (otherwise 400 INVITE_INVALID). ' +
        'With OIDC_ONLY, 403 PASSWORD_LOGIN_DISABLED: accounts come from signing in with the identity provider.',
      body: RegisterBody,
      response: { 201: Type.Ref('TokenPair'), ...errorResponses(400, 403, 409, 429) }
    })
  }, async function (request, reply) {
    if (config.oidc?.only === true) throw new errors.passwordLoginDisabled()
    const { email, password, name, inviteToken } = request.body
    const passwordHash = await hashPassword(password, config.bcryptCost, passwordKey.email(email))
    const pair = await request.db.begin(async tx => {
      await lockForTransaction(tx, LOCKS.registration)
      const first = !(await anyUserExists(tx))
      if (!first && config.registration === 'closed') throw new errors.registrationClosed('Registration is closed')
      if (!first && config.registration === 'invite' && inviteToken == null) {
        throw new errors.registrationClosed('Registration needs an invite')
      }
      const invite = inviteToken == null ? null : await findOpenInvite(tx, tokens.hash(inviteToken), { email })
      if (invite === undefined) throw new errors.inviteInvalid()
      if (await emailTaken(tx, email)) throw new errors.emailTaken()

      const user = await openAccount(tx, { email, name, passwordHash, first }, invite)
      if (invite !== null && !(await useInvite(tx, invite.id, user.id))) throw new errors.inviteInvalid()
      return startSession(fastify, tx, request, user)
    })
    return reply.code(201).send(pair)
  })

  fastify.post('/api/auth/login', {
    config: rateLimit,
    // Once the body names the account: guessing one account's password from many addresses is limited too.
    preHandler: fastify.authLimit('login-account', loginAccount),
    schema: operation('login', 'Sign in with e-mail and password', {
      description: 'Limited per client address, and per account (the e-mail, in any case) once the body is read: AUTH_RATE_LIMIT_MAX requests a window each, refused ones included; beyond, 429 with Retry-After. ' +
        'Passwords are checked in turns between accounts; an account with two checks waiting or running gets a 429 with Retry-After for a third. ' +
        'With OIDC_ONLY, 403 PASSWORD_LOGIN_DISABLED before any password is checked, except for the first administrator until an administrator has signed in with the identity provider.',
      body: LoginBody,
      response: { 200: Type.Ref('TokenPair'), ...errorResponses(400, 401, 403, 429) }
    })
  }, async function (request) {
    const { email, password } = request.body
    const account = await findCredentials(request.db, email)
    // Without a password check: whoever asks learns nothing of the password, nor, but for the first administrator, whether the account exists.
    if (config.oidc?.only === true && (account === undefined || !(await passwordStillAllowed(request.db, account.id)))) {
      throw new errors.passwordLoginDisabled()
    }
    // An unknown account's check waits in the turn of its e-mail, as a known one's in its user's.
    const key = account === undefined ? passwordKey.email(email) : passwordKey.user(account.id)
    const matches = await verifyPassword(password, account?.passwordHash ?? await dummyHash(config.bcryptCost), key)
    if (account === undefined || !matches) throw new errors.invalidCredentials()
    if (account.disabled) throw new errors.accountDisabled()
    const { passwordHash: _hash, disabled: _disabled, ...user } = account
    return request.db.begin(async tx => {
      return startSession(fastify, tx, request, user)
    })
  })

  fastify.post('/api/auth/refresh', {
    config: rateLimit,
    schema: operation('refreshTokens', 'Trade a refresh token for a new pair', {
      description: 'The presented refresh token stops working. Presenting it again after REFRESH_REUSE_GRACE seconds revokes the whole session.',
      body: RefreshBody,
      response: { 200: Type.Ref('TokenPair'), ...errorResponses(400, 401, 429) }
    })
  }, async function (request) {
    const claims = tokens.readRefresh(request.body.refreshToken)
    const outcome = await request.db.begin(async tx => {
      const stored = await lockRefreshToken(tx, tokens.hash(request.body.refreshToken))
      if (stored === undefined || stored.userId !== claims.userId || stored.sessionId !== claims.sessionId ||
          stored.sessionRevoked || stored.sessionExpired) {
        return { refused: new errors.refreshTokenInvalid() }
      }
      if (stored.rotatedSecondsAgo !== null) {
        if (stored.rotatedSecondsAgo <= config.refreshReuseGrace) return { refused: new errors.refreshTokenInvalid() }
        await revokeSession(tx, stored.sessionId)
        return { refused: new errors.refreshTokenReused() }
      }
      const account = await findCredentialsById(tx, stored.userId)
      if (account === undefined || account.disabled) return { refused: new errors.refreshTokenInvalid() }
      const { passwordHash: _hash, disabled: _disabled, ...user } = account
      await markRotated(tx, stored.id)
      return { pair: { ...(await tokens.issue(tx, user, stored.sessionId, stored.id)), user } }
    })
    // A refusal is thrown after the commit, so that a revocation for reuse is kept.
    if ('refused' in outcome) throw outcome.refused
    return outcome.pair
  })

  fastify.post('/api/auth/logout', {
    // A personal access token ends when deleted, not by logging out.
    config: { personalTokens: 'refused' },
    onRequest: fastify.authenticate,
    schema: operation('logout', 'End the session of the access token', {
      security: BEARER,
      description: 'Also ends the session of the given refresh token when it is the same user\'s.',
      body: LogoutBody,
      response: noContent('Signed out', 400, 401, 403)
    })
  }, async function (request, reply) {
    const { id, sessionId } = request.user
    const given = request.body.refreshToken
    let other: number | null = null
    if (given != null) {
      try {
        const claims = tokens.readRefresh(given)
        if (claims.userId === id) other = claims.sessionId
      } catch {}
    }
    await request.db.begin(async tx => {
      await revokeSession(tx, sessionId)
      if (other !== null) await revokeSession(tx, other)
    })
    return reply.code(204).send(null)
  })
}

export default auth
