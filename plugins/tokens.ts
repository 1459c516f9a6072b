import fp from 'fastify-plugin'
import jwt from '@fastify/jwt'
import { createHash, randomBytes } from 'node:crypto'
import { errors } from '../lib/errors'
import { Keyring, keyId } from '../lib/keyring'
import type { Db } from '../db/client'
import { insertRefreshToken } from '../sql/sessions'
import { familyIdsOf } from '../sql/families'
import type { Role } from '../lib/roles'

/** What limits a personal access token: its scope, and the one family it may reach. */
export interface TokenLimits {
  scope: 'read' | 'write'
  familyId: number | null
}

/** The caller of a protected route, read from the database on every request. */
export interface AuthUser {
  id: number
  role: Role
  sessionId: number
  /** The limits of the personal access token the request came with; null for an access token. */
  token: TokenLimits | null
}

/** What an access token names: the only claims the service trusts. */
export interface AccessIdentity {
  userId: number
  sessionId: number
}

interface AccessClaims {
  sub: string
  sid: number
  role: Role
  families: number[]
}

export interface TokenPair {
  accessToken: string
  refreshToken: string
  tokenType: 'Bearer'
  expiresIn: number
  refreshExpiresIn: number
}

export interface Tokens {
  /** Signs a new pair for a session and stores the refresh token's hash. */
  issue: (db: Db, user: { id: number, role: Role }, sessionId: number, replacesId: number | null) => Promise<TokenPair>
  /** The user and session of a refresh token whose signature and lifetime are good. */
  readRefresh: (token: string) => AccessIdentity
  /** The user and session of an access token whose signature and lifetime are good; a 401 otherwise. */
  readAccess: (token: string) => AccessIdentity
  hash: (token: string) => string
}

declare module '@fastify/jwt' {
  interface FastifyJWT {
    payload: AccessClaims
    user: AuthUser
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    tokens: Tokens
  }
}

function positiveInteger (value: unknown): number | null {
  const number = typeof value === 'string' ? Number(value) : value
  return typeof number === 'number' && Number.isInteger(number) && number > 0 && number <= 2147483647 ? number : null
}

function sha256 (token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

/**
 * Access and refresh tokens: signing, reading, and the stored hash of each
 * refresh token. Only the user id and session id are trusted from a token.
 */
export default fp(async function tokens (fastify) {
  const { config } = fastify

  // Access tokens are signed by @fastify/jwt with the current secret and its
  // kid; both kinds are verified by their keyring, which knows the previous
  // secret too during a rotation.
  const access = new Keyring(config.jwtSecret, config.jwtSecretPrevious, config.accessTokenTtl)
  const refresh = new Keyring(config.jwtRefreshSecret, config.jwtRefreshSecretPrevious, config.refreshTokenTtl)
  await fastify.register(jwt, {
    secret: config.jwtSecret,
    sign: { algorithm: 'HS256', expiresIn: config.accessTokenTtl, kid: keyId(config.jwtSecret) },
    verify: { algorithms: ['HS256'] }
  })

  const decorated: Tokens = {
    hash: sha256,
    async issue (db, user, sessionId, replacesId) {
      const families = await familyIdsOf(db, { userId: user.id, familyId: null })
      const accessToken = fastify.jwt.sign({ sub: String(user.id), sid: sessionId, role: user.role, families })
      const refreshToken = refresh.sign({ sub: String(user.id), sid: sessionId, jti: randomBytes(16).toString('base64url') })
      await insertRefreshToken(db, { sessionId, userId: user.id, tokenHash: sha256(refreshToken), replacesId, ttlSeconds: config.refreshTokenTtl })
      return { accessToken, refreshToken, tokenType: 'Bearer', expiresIn: config.accessTokenTtl, refreshExpiresIn: config.refreshTokenTtl }
    },
    readRefresh (token) {
      let claims: { sub?: unknown, sid?: unknown }
      try {
        claims = refresh.verify(token)
      } catch {
        throw new errors.refreshTokenInvalid()
      }
      const userId = positiveInteger(claims.sub)
      const sessionId = positiveInteger(claims.sid)
      if (userId === null || sessionId === null) throw new errors.refreshTokenInvalid()
      return { userId, sessionId }
    },
    readAccess (token) {
      let claims: AccessClaims
      try {
        claims = access.verify(token) as unknown as AccessClaims
      } catch (error) {
        if (String((error as { code?: string }).code).includes('EXPIRED')) throw new errors.tokenExpired()
        throw new errors.unauthorized('The access token is not valid')
      }
      const userId = positiveInteger(claims.sub)
      const sessionId = positiveInteger(claims.sid)
      if (userId === null || sessionId === null) throw new errors.unauthorized('The access token is not valid')
      return { userId, sessionId }
    }
  }
  fastify.decorate('tokens', decorated)
}, { name: 'tokens', dependencies: ['config', 'db'] })
