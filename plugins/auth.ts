import fp from 'fastify-plugin'
import jwt from '@fastify/jwt'
import { createSigner, createVerifier } from 'fast-jwt'
import { createHash, randomBytes } from 'node:crypto'
import type { FastifyRequest } from 'fastify'
import { errors } from '../lib/errors'
import type { Db } from './db'
import { findPrincipal, insertRefreshToken } from '../sql/sessions'
import { targetQuery } from '../sql/scope'
import { prefetchableTarget } from './family-scope'
import { familyIdsOf } from '../sql/families'
import type { Role } from '../sql/users'

/** The caller of a protected route, read from the database on every request. */
export interface AuthUser {
  id: number
  role: Role
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
  readRefresh: (token: string) => { userId: number, sessionId: number }
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
    authenticate: (request: FastifyRequest) => Promise<void>
    tokens: Tokens
  }
}

const BEARER = /^Bearer\s+(\S+)\s*$/i

function positiveInteger (value: unknown): number | null {
  const number = typeof value === 'string' ? Number(value) : value
  return typeof number === 'number' && Number.isInteger(number) && number > 0 && number <= 2147483647 ? number : null
}

function sha256 (token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

/**
 * Access and refresh tokens, and the `authenticate` hook of every protected
 * route. Only the user id and session id are trusted from an access token;
 * role, session state and memberships are read from the database each time.
 */
export default fp(async function auth (fastify) {
  const { config } = fastify

  await fastify.register(jwt, {
    secret: config.jwtSecret,
    sign: { algorithm: 'HS256', expiresIn: config.accessTokenTtl },
    verify: { algorithms: ['HS256'] }
  })

  const signRefresh = createSigner({ key: config.jwtRefreshSecret, algorithm: 'HS256', expiresIn: config.refreshTokenTtl * 1000 })
  const verifyRefresh = createVerifier({ key: config.jwtRefreshSecret, algorithms: ['HS256'] })

  const tokens: Tokens = {
    hash: sha256,
    async issue (db, user, sessionId, replacesId) {
      const families = await familyIdsOf(db, user.id)
      const accessToken = fastify.jwt.sign({ sub: String(user.id), sid: sessionId, role: user.role, families })
      const refreshToken = signRefresh({ sub: String(user.id), sid: sessionId, jti: randomBytes(16).toString('base64url') })
      await insertRefreshToken(db, { sessionId, userId: user.id, tokenHash: sha256(refreshToken), replacesId, ttlSeconds: config.refreshTokenTtl })
      return { accessToken, refreshToken, tokenType: 'Bearer', expiresIn: config.accessTokenTtl, refreshExpiresIn: config.refreshTokenTtl }
    },
    readRefresh (token) {
      let claims: { sub?: unknown, sid?: unknown }
      try {
        claims = verifyRefresh(token)
      } catch {
        throw new errors.refreshTokenInvalid()
      }
      const userId = positiveInteger(claims.sub)
      const sessionId = positiveInteger(claims.sid)
      if (userId === null || sessionId === null) throw new errors.refreshTokenInvalid()
      return { userId, sessionId }
    }
  }
  fastify.decorate('tokens', tokens)

  fastify.decorate('authenticate', async function authenticate (request: FastifyRequest) {
    const match = BEARER.exec(request.headers.authorization ?? '')
    if (match === null) throw new errors.unauthorized('A bearer token is required')
    let claims: AccessClaims
    try {
      claims = fastify.jwt.verify<AccessClaims>(match[1])
    } catch (error) {
      if (String((error as { code?: string }).code).includes('EXPIRED')) throw new errors.tokenExpired()
      throw new errors.unauthorized('The access token is not valid')
    }
    const userId = positiveInteger(claims.sub)
    const sessionId = positiveInteger(claims.sid)
    if (userId === null || sessionId === null) throw new errors.unauthorized('The access token is not valid')
    const ahead = fastify.hasDecorator('scopedRoutes') ? prefetchableTarget(fastify.scopedRoutes, request) : null
    const lookup = ahead === null ? null : targetQuery(fastify.sql, userId, ahead.target, ahead.id)
    const principal = await findPrincipal(fastify.sql, userId, sessionId, lookup)
    if (principal === undefined || !principal.sessionActive) throw new errors.unauthorized('The session has ended')
    if (principal.disabled) throw new errors.accountDisabled()
    request.user = { id: principal.id, role: principal.role, sessionId }
    if (ahead !== null) request.prefetchedScope = { locator: ahead.locator, id: ahead.id, resolved: principal.target }
  })
}, { name: 'auth', dependencies: ['config', 'db'] })
