import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify'
import { ambientFamily } from '../db/ambient'
import { NO_VISIT } from '../kinds/rules'
import type { Db } from '../db/client'
import { errors, invalidRequest, withDetails } from '../lib/errors'
import { covers } from '../lib/roles'
import { looksPersonal, wellFormedPersonal } from '../lib/personal-tokens'
import { createChecked, findPrincipal, readChecked, resolveTarget, targetQuery, type Caller, type ClockOf, type Principal, type Resolved } from '../sql/access'
import { familyIdsOf } from '../sql/families'
import { identifyToken } from '../sql/sessions'
import { checkTokenRule } from './token-rules'
import type { AuthUser, TokenLimits } from './tokens'
import {
  clockFor, decorateScope, defaultName, expectedVersions, locatorOf, markScope, neededRole, preconditionFailed, read, rolesCovering, routeScope,
  type Locator, type OneStatementCreate, type OneStatementRead, type Scope, type ScopeOptions, type Target
} from './scope'

export type { Locator, OneStatementCreate, OneStatementRead, Scope, ScopeOptions, Target } from './scope'
export { notModified } from './conditional-reads'
export { preconditionFailed } from './scope'

/** A target the authentication looked up ahead, in its own statement, for the scope to use. */
interface Prefetched {
  locator: Locator
  id: number
  resolved: Resolved | null
}

declare module 'fastify' {
  interface FastifyRequest {
    /** What the family scope resolved; read before it has decided, it throws (plugins/scope.ts). */
    scope: Scope
    prefetchedScope: Prefetched | null
    /** The row a one-statement create wrote, as the API answers it. */
    created: Record<string, unknown> | null
    /** The answer a one-statement read found, as JSON, when no held answer served. */
    answer: string | null
  }
  interface FastifyInstance {
    /** The onRequest hook of every protected route: a valid access token of an active session. */
    authenticate: (request: FastifyRequest) => Promise<void>
    /**
     * The user the request's access token names, its signature and expiry
     * checked but not its session, which needs the database: null without a
     * valid token. Only for checks that count nothing and let `authenticate`
     * decide after them.
     */
    tokenSubject: (request: FastifyRequest) => number | null
    familyScope: (options: ScopeOptions) => preHandlerAsyncHookHandler
  }
}

const BEARER = /^Bearer\s+(\S+)\s*$/i

/** Whom a request's family checks are for: its user, within the limits of its personal access token. */
export function callerOf (user: AuthUser): Caller {
  return { userId: user.id, familyId: user.token?.familyId ?? null }
}

/**
 * The target of a request's route, when its id is in the path or the query
 * string, so that authentication can look it up in the same statement as the
 * caller. The scope still decides: this only saves it a round trip.
 */
function prefetchableTarget (scopedRoutes: Map<string, ScopeOptions>, request: FastifyRequest): { target: Target, locator: Locator, id: number, clock: ClockOf } | null {
  const options = scopedRoutes.get(`${request.method} ${request.routeOptions.url}`)
  if (options === undefined) return null
  const locator = locatorOf(options.target)
  if (locator.startsWith('body.')) return null
  const raw = read(request, locator)
  if (typeof raw !== 'string' || !/^[1-9]\d{0,9}$/.test(raw)) return null
  const id = Number(raw)
  return id <= 2147483647 ? { target: options.target, locator, id, clock: clockFor(options) } : null
}

/** The caller's family when there is exactly one; otherwise the field is required. */
async function onlyFamily (db: Db, request: FastifyRequest, locator: Locator): Promise<number> {
  const families = await familyIdsOf(db, callerOf(request.user))
  if (families.length === 1) return families[0]
  const path = '/' + locator.replace('.', '/')
  throw withDetails(new errors.validation('The request is not valid'), {
    issues: [{ path, message: families.length === 0 ? 'is required: you belong to no family' : 'is required when you belong to several families' }]
  })
}

/**
 * Whether a family is out of reach of the running request: inside a batch,
 * only the batch's family may be touched, whatever else the caller belongs to.
 */
function outOfReach (familyId: number): boolean {
  const only = ambientFamily()
  return only !== null && only !== familyId
}


/**
 * The one place that decides who may do what.
 *
 * `authenticate` runs first on every protected route: a valid access token of
 * an active session of an enabled user, read from the database on every
 * request, so that revocation takes effect at once. A personal access token
 * (`cht_…`) names a session of its own, checked the same way; its limits
 * come along: what it may do on a route is decided before validation
 * (plugins/token-rules.ts), and a token bound to a family is a member of no
 * other in every family query below.
 *
 * `familyScope` then decides, before the handler runs, whether the caller may
 * touch a family's data: it resolves the target (a family, a child, or a
 * record through its child) to its family and the caller's role there, in one
 * query. A target that does not exist is a 404, one of a family the caller is
 * not in is a 403, and a write below the needed role is a 403. Administrators
 * get no way around it. The handler trusts what it decided.
 *
 * When the route's target id is in the path or the query string, its lookup
 * rides along in the authentication's statement: one round trip instead of
 * two. A `oneStatement` route goes further: authentication reads only the
 * token, and the scope decides the session, the target and the role in the
 * statement that reads the answer or writes the record.
 */
export default fp(async function access (fastify) {
  decorateScope(fastify)
  fastify.decorateRequest('prefetchedScope', null)
  fastify.decorateRequest('created', null)
  fastify.decorateRequest('answer', null)
  const scopedRoutes = new Map<string, ScopeOptions>()
  const requestScope = (request: FastifyRequest): ScopeOptions | undefined => scopedRoutes.get(`${request.method} ${request.routeOptions.url}`)

  /** The session must be active and its user enabled. */
  function admit (principal: Pick<Principal, 'sessionActive' | 'disabled'> | null | undefined): void {
    if (principal === undefined || principal === null || !principal.sessionActive) throw new errors.unauthorized('The session has ended')
    if (principal.disabled) throw new errors.accountDisabled()
  }

  async function checkSession (request: FastifyRequest, userId: number, sessionId: number, token: TokenLimits | null): Promise<void> {
    const ahead = prefetchableTarget(scopedRoutes, request)
    const caller: Caller = { userId, familyId: token?.familyId ?? null }
    const lookup = ahead === null ? null : targetQuery(fastify.sql, caller, ahead.target, ahead.id, ahead.clock)
    const principal = await findPrincipal(fastify.sql, userId, sessionId, lookup)
    admit(principal)
    request.user = { id: userId, role: (principal as Principal).role, sessionId, token }
    if (ahead !== null) request.prefetchedScope = { locator: ahead.locator, id: ahead.id, resolved: (principal as Principal).target }
  }

  /** The session and limits of a personal access token: its state is checked with the session's, as for an access token. */
  async function personalIdentity (token: string): Promise<{ userId: number, sessionId: number, token: TokenLimits }> {
    const found = wellFormedPersonal(token) ? await identifyToken(fastify.sql, fastify.tokens.hash(token)) : undefined
    if (found === undefined) throw new errors.unauthorized('The personal access token is not valid')
    return { userId: found.userId, sessionId: found.sessionId, token: { scope: found.scope, familyId: found.familyId } }
  }

  fastify.decorate('authenticate', async function authenticate (request: FastifyRequest) {
    const match = BEARER.exec(request.headers.authorization ?? '')
    if (match === null) throw new errors.unauthorized('A bearer token is required')
    const { userId, sessionId, token } = looksPersonal(match[1])
      ? await personalIdentity(match[1])
      : { ...fastify.tokens.readAccess(match[1]), token: null }
    if (requestScope(request)?.oneStatement !== undefined) {
      // The session is read by the scope, in the statement that reads or writes.
      request.user = { id: userId, role: 'user', sessionId, token }
      return
    }
    await checkSession(request, userId, sessionId, token)
  })

  // A personal access token's limits on the route: before the route's own
  // hooks, an upload's reception and the family scope among them.
  fastify.addHook('preValidation', async request => {
    const token = (request.user as AuthUser | null)?.token
    if (token !== undefined && token !== null) checkTokenRule(request, token)
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

  fastify.addHook('onRoute', route => {
    const scoped = routeScope(route)
    if (scoped === undefined) return
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) scopedRoutes.set(`${method} ${route.url}`, scoped)
  })

  /** The scope's decision for a request of a route with these options; a reply it answered itself, or nothing. */
  async function decideScope (request: FastifyRequest, reply: FastifyReply, options: ScopeOptions): Promise<FastifyReply | undefined> {
    const name = options.name ?? defaultName(options.target)
    const method = request.method
    const target = options.target
    const locator = locatorOf(target)
    let id = read(request, locator)
    if (id === undefined || id === null) {
      if (options.whenAbsent === 'skip') return
      if (options.whenAbsent === 'only-family') id = await onlyFamily(fastify.sql, request, locator)
    }
    if (typeof id !== 'number') throw new errors.notFound(name)

    const prefetched = request.prefetchedScope
    const resolved = prefetched !== null && prefetched.locator === locator && prefetched.id === id
      ? prefetched.resolved ?? undefined
      : await resolveTarget(fastify.sql, callerOf(request.user), target, id, clockFor(options))
    if (resolved === undefined) throw new errors.notFound(name)
    if (resolved.role === null || outOfReach(resolved.familyId)) throw new errors.forbidden()
    const acting = options.self !== undefined && read(request, options.self) === request.user.id
    if (!acting && !covers(resolved.role, neededRole(request, options))) throw new errors.forbidden()

    let expectedVersion: number | null = null
    if (options.ifMatch === true && resolved.version !== null) {
      const versions = expectedVersions(request)
      if (versions !== null && versions !== 'any' && !versions.includes(resolved.version)) throw preconditionFailed(resolved.version)
      if (versions !== null) expectedVersion = resolved.version
    }
    request.scope = {
      familyId: resolved.familyId,
      childId: resolved.childId,
      childBirth: resolved.childBirth,
      role: resolved.role,
      version: resolved.version,
      expectedVersion
    }
    if (options.etag === undefined || (method !== 'GET' && method !== 'HEAD')) return
    // Decided after the scope, exactly as the 200 would have been.
    const etag = fastify.conditional.tagOf(request, options, resolved)
    if (etag === null) return
    return fastify.conditional.serve(request, reply, etag, options.cache === true)
  }

  /**
   * A create decided in its insert's statement: the session, the child and
   * the caller's role against the route's, the rules that need the database,
   * and the insert, which writes only when all of them allow it. Its errors
   * come in the order of a create's checks: 401, 404, 403, then the rules.
   */
  async function createInOneStatement (request: FastifyRequest, options: ScopeOptions, how: OneStatementCreate, values: Record<string, unknown>): Promise<void> {
    const childId = read(request, locatorOf(options.target))
    if (typeof childId !== 'number') throw new errors.notFound(options.name ?? defaultName(options.target))
    const early = how.rules(values, null, NO_VISIT)
    const found = await createChecked(fastify.sql, {
      caller: callerOf(request.user),
      sessionId: request.user.sessionId,
      childId,
      dates: how.dates(values),
      visitId: typeof values.visitId === 'number' ? values.visitId : null,
      visitBy: how.visitBy(values),
      rulesOk: early.length === 0,
      roles: rolesCovering(neededRole(request, options)),
      family: ambientFamily()
    }, actor => how.insert(childId, values, actor))
    admit(found.principal)
    request.user = { ...request.user, role: (found.principal as NonNullable<typeof found.principal>).role }
    const target = found.target
    if (target === null) throw new errors.notFound(options.name ?? defaultName(options.target))
    if (target.role === null || outOfReach(target.familyId) || !covers(target.role, neededRole(request, options))) throw new errors.forbidden()
    request.scope = { familyId: target.familyId, childId, childBirth: target.childBirth, role: target.role, version: null, expectedVersion: null }
    if (found.created !== null) {
      request.created = how.present(found.created)
      return
    }
    // Nothing was written: a rule that needs the child does not hold.
    const issues = how.rules(values, target.childBirth, { ofChild: found.visitOk, date: found.visitDate })
    if (issues.length > 0) throw invalidRequest(issues)
    throw new Error('the record was not written although every check passed')
  }

  /**
   * A read decided and answered in one statement: 401, 403 or 404, a 304 when
   * If-None-Match names the current ETag, this instance's kept answer when it
   * has that ETag; otherwise the handler sends the answer the database wrote.
   */
  async function readInOneStatement (request: FastifyRequest, reply: FastifyReply, options: ScopeOptions, how: OneStatementRead): Promise<FastifyReply | undefined> {
    const clock = clockFor(options)
    if (clock === null) throw new Error('a read in one statement needs the clock of what it shows')
    const id = read(request, locatorOf(options.target))
    const cache = options.cache === true
    const held = fastify.conditional.held(request, cache)
    // When an answer is held, by this instance or by the client, it most
    // likely still serves: the statement asks only for the session and the
    // scope, and the answer is read apart in the rare case it does not serve.
    // Otherwise the answer is written in the same statement.
    const { id: userId, sessionId } = request.user
    const caller = callerOf(request.user)
    let found: { role: 'admin' | 'user', disabled: boolean, sessionActive: boolean, target: Resolved | null, body: string | null } | undefined
    if (typeof id !== 'number') found = undefined
    else if (held.any) {
      const principal = await findPrincipal(fastify.sql, userId, sessionId, targetQuery(fastify.sql, caller, options.target, id, clock))
      found = principal === undefined ? undefined : { ...principal, body: null }
    } else found = await readChecked(fastify.sql, { caller, sessionId }, options.target, id, clock, how.answer(request))
    admit(found)
    const { role, target: resolved, body } = found as NonNullable<typeof found>
    request.user = { ...request.user, role }
    if (resolved === null) throw new errors.notFound(options.name ?? defaultName(options.target))
    if (resolved.role === null || outOfReach(resolved.familyId) || !covers(resolved.role, neededRole(request, options))) throw new errors.forbidden()
    request.scope = { familyId: resolved.familyId, childId: resolved.childId, childBirth: resolved.childBirth, role: resolved.role, version: resolved.version, expectedVersion: null }
    const answered = await fastify.conditional.finish(request, reply, held, resolved.clock as string, cache, async () => {
      const answer = body ?? (await fastify.sql<Array<{ body: string | null }>>`select ${how.answer(request)} as body`)[0].body
      if (answer === null) throw new Error('the database wrote no answer for a read it allowed')
      return answer
    })
    if (typeof answered !== 'string') return answered
    request.answer = answered
  }

  /**
   * A repeat of an Idempotency-Key, whose first answer the route sends again
   * only past this check, writing nothing: the caller must still act, within
   * its token's family and its batch's, in the role the route needs in the
   * family of the first answer (its target may be gone since: a delete).
   */
  async function admitRepeat (request: FastifyRequest, reply: FastifyReply, options: ScopeOptions): Promise<FastifyReply | undefined> {
    if (options.oneStatement !== undefined) await checkSession(request, request.user.id, request.user.sessionId, request.user.token)
    const familyId = request.heldReplay?.familyId ?? null
    if (familyId === null) return await decideScope(request, reply, options)
    const family = await resolveTarget(fastify.sql, callerOf(request.user), { family: null }, familyId)
    if (family === undefined) throw new errors.notFound('Family')
    const acting = options.self !== undefined && read(request, options.self) === request.user.id
    if (family.role === null || outOfReach(familyId) || (!acting && !covers(family.role, neededRole(request, options)))) throw new errors.forbidden()
  }

  fastify.decorate('familyScope', function (options: ScopeOptions): preHandlerAsyncHookHandler {
    const how = options.oneStatement
    const scope: preHandlerAsyncHookHandler = async function scope (request, reply) {
      if (request.heldReplay !== null) return await admitRepeat(request, reply, options)
      if (how === undefined) return await decideScope(request, reply, options)
      if ('answer' in how) return await readInOneStatement(request, reply, options, how)
      const values = how.values(request)
      if (values !== null) return await createInOneStatement(request, options, how, values)
      // Not one statement: the session and the scope as for any route, then the handler writes.
      await checkSession(request, request.user.id, request.user.sessionId, request.user.token)
      return await decideScope(request, reply, options)
    }
    return markScope(scope, options)
  })
}, { name: 'access', dependencies: ['db', 'tokens', 'conditional-reads'] })
