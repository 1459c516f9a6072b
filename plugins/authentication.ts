import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import type { Db } from '../db/client'
import { errors } from '../lib/errors'
import { looksPersonal, wellFormedPersonal } from '../lib/personal-tokens'
import { findPrincipal, targetQuery, type Caller, type ClockOf, type Principal, type Resolved } from '../sql/access'
import { identifyToken } from '../sql/sessions'
import { clockFor, locatorOf, read, type Locator, type ScopeOptions, type Target } from './scope'
import { checkTokenRule } from './token-rules'
import type { AuthUser, TokenLimits } from './tokens'

/** A target the authentication looked up ahead, in its own statement, for the family scope to use. */
export interface Prefetched {
  locator: Locator
  id: number
  resolved: Resolved | null
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's family scope: the authentication looks its target up ahead, in the session's statement. */
    scope?: ScopeOptions
    /**
     * `statement`: the route checks the session itself, in the statement that
     * reads its answer or writes its record; authentication reads only the token.
     */
    session?: 'statement'
  }
  interface FastifyRequest {
    prefetchedScope: Prefetched | null
  }
  interface FastifyInstance {
    /** The onRequest hook of every protected route: a valid access token of an active session. */
    authenticate: (request: FastifyRequest) => Promise<void>
    /**
     * The session of a request whose authentication read only its token
     * (`session: 'statement'`), checked as `authenticate` checks it, for
     * a request that is not decided in one statement after all.
     */
    checkSession: (request: FastifyRequest) => Promise<void>
    /**
     * The user the request's access token names, its signature and expiry
     * checked but not its session, which needs the database: null without a
     * valid token. Only for checks that count nothing and let `authenticate`
     * decide after them.
     */
    tokenSubject: (request: FastifyRequest) => number | null
  }
}

const BEARER = /^Bearer\s+(\S+)\s*$/i

/** Whom a request's family checks are for: its user, within the limits of its personal access token. */
export function callerOf (user: AuthUser): Caller {
  return { userId: user.id, familyId: user.token?.familyId ?? null }
}

/** The session must be active and its user enabled: 401 otherwise, or the refusal of a disabled account. */
export function admit<T extends Pick<Principal, 'sessionActive' | 'disabled'>> (principal: T | null | undefined): asserts principal is T {
  if (principal === undefined || principal === null || !principal.sessionActive) throw new errors.unauthorized('The session has ended')
  if (principal.disabled) throw new errors.accountDisabled()
}

/**
 * The target of a request's route, when its id is in the path or the query
 * string, so that authentication can look it up in the same statement as the
 * caller. The family scope still decides: this only saves it a round trip.
 */
function prefetchableTarget (request: FastifyRequest): { target: Target, locator: Locator, id: number, clock: ClockOf } | null {
  const options = request.routeOptions.config.scope
  if (options === undefined) return null
  const locator = locatorOf(options.target)
  if (locator.startsWith('body.')) return null
  const raw = read(request, locator)
  if (typeof raw !== 'string' || !/^[1-9]\d{0,9}$/.test(raw)) return null
  const id = Number(raw)
  return id <= 2147483647 ? { target: options.target, locator, id, clock: clockFor(options) } : null
}

/**
 * Who a request acts for. `authenticate` runs first on every protected
 * route: a valid access token of an active session of an enabled user, read
 * from the database on every request, so that revocation takes effect at
 * once. A personal access token (`cht_…`) names a session of its own,
 * checked the same way; its limits come along: what it may do on a route is
 * decided before validation (plugins/token-rules.ts), and a token bound to a
 * family is a member of no other in every family query.
 *
 * When the route's family scope has its target id in the path or the query
 * string (`config.scope`), the target's lookup rides along in the session's
 * statement: one round trip instead of two. A route that checks the session
 * in its own statement (`config.session`) has only its token read here.
 */
export default fp(async function authentication (fastify) {
  fastify.decorateRequest('prefetchedScope', null)

  async function checkSession (request: FastifyRequest, userId: number, sessionId: number, token: TokenLimits | null): Promise<void> {
    const ahead = prefetchableTarget(request)
    const caller: Caller = { userId, familyId: token?.familyId ?? null }
    const lookup = ahead === null ? null : targetQuery(request.reads, caller, ahead.target, ahead.id, ahead.clock)
    const principal = await findPrincipal(request.reads, userId, sessionId, lookup)
    admit(principal)
    request.user = { id: userId, role: (principal as Principal).role, sessionId, token }
    if (ahead !== null) request.prefetchedScope = { locator: ahead.locator, id: ahead.id, resolved: (principal as Principal).target }
  }

  /** The session and limits of a personal access token: its state is checked with the session's, as for an access token. */
  async function personalIdentity (db: Db, token: string): Promise<{ userId: number, sessionId: number, token: TokenLimits }> {
    const found = wellFormedPersonal(token) ? await identifyToken(db, fastify.tokens.hash(token)) : undefined
    if (found === undefined) throw new errors.unauthorized('The personal access token is not valid')
    return { userId: found.userId, sessionId: found.sessionId, token: { scope: found.scope, familyId: found.familyId } }
  }

  fastify.decorate('authenticate', async function authenticate (request: FastifyRequest) {
    const match = BEARER.exec(request.headers.authorization ?? '')
    if (match === null) throw new errors.unauthorized('A bearer token is required')
    const { userId, sessionId, token } = looksPersonal(match[1])
      ? await personalIdentity(request.db, match[1])
      : { ...fastify.tokens.readAccess(match[1]), token: null }
    if (request.routeOptions.config.session === 'statement') {
      // The session is read by the route, in the statement that reads or writes.
      request.user = { id: userId, role: 'user', sessionId, token }
      return
    }
    await checkSession(request, userId, sessionId, token)
  })

  fastify.decorate('checkSession', async function (request: FastifyRequest) {
    await checkSession(request, request.user.id, request.user.sessionId, request.user.token)
  })

  // A personal access token's limits on the route: before the route's own
  // hooks, an upload's reception and the family scope among them.
  // A callback, not an async function: a request without such a token pays for no promise.
  fastify.addHook('preValidation', (request, _reply, done) => {
    const token = (request.user as AuthUser | null)?.token
    try {
      if (token !== undefined && token !== null) checkTokenRule(request, token)
    } catch (error) {
      done(error as Error)
      return
    }
    done()
  })

  fastify.decorate('tokenSubject', function tokenSubject (request: FastifyRequest): number | null {
    const match = BEARER.exec(request.headers.authorization ?? '')
    if (match === null) return null
    try {
      return fastify.tokens.readAccess(match[1]).userId
    } catch {
      return null
    }
  })
}, { name: 'authentication', dependencies: ['db', 'handover', 'tokens'] })
