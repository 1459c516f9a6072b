import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify'
import type { Db } from '../db/client'
import { errors, withDetails } from '../lib/errors'
import { covers } from '../lib/roles'
import { utcToday } from '../lib/days'
import { clockOfTag, clockTag, ifMatchVersions, noneMatch, urlHash, versionTag } from '../lib/etag'
import type { PendingQuery, Row } from 'postgres'
import { findPrincipal, readChecked, resolveTarget, targetQuery, type CheckedCreate, type CheckedRead, type ClockOf, type Principal, type Resolved } from '../sql/access'
import { familyIdsOf } from '../sql/families'
import type { Locator, Scope, ScopeOptions, Target } from './scope'

export type { Locator, Scope, ScopeOptions, Target } from './scope'

/** A target the authentication looked up ahead, in its own statement, for the scope to use. */
interface Prefetched {
  locator: Locator
  id: number
  resolved: Resolved | null
}

declare module 'fastify' {
  interface FastifyRequest {
    scope: Scope
    prefetchedScope: Prefetched | null
    /** Only the token was read: the session and the scope are decided with the write (`oneStatement`). */
    deferredAccess: boolean
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
    /** Decides a `oneStatement` request now, in a round trip of its own, as authentication and the scope would have. */
    completeAccess: (request: FastifyRequest, reply: FastifyReply) => Promise<void>
    /** Decides a `oneStatement` create from what its statement found: 401, 403 or 404 in the order of the checks. */
    decideCreate: (request: FastifyRequest, found: CheckedCreate) => NonNullable<CheckedCreate['target']>
    /**
     * Decides and answers a `oneStatement` read in one statement: 401, 403 or
     * 404, a 304 when If-None-Match names the current ETag, this instance's
     * kept answer when it has that ETag, or the answer the database wrote.
     */
    answerRead: (request: FastifyRequest, reply: FastifyReply, body: () => Fragment) => Promise<FastifyReply>
  }
}

const BEARER = /^Bearer\s+(\S+)\s*$/i

type Fragment = PendingQuery<Row[]>

const SCOPE = Symbol('scope options')

function locatorOf (target: Target): Locator {
  return 'family' in target ? target.family : 'child' in target ? target.child : target.at
}

function clockFor (options: ScopeOptions): ClockOf {
  return options.etag === 'child' || options.etag === 'family' ? options.etag : null
}

/** Answers a conditional read whose ETag is current: 304, no body. */
export function notModified (reply: FastifyReply): FastifyReply {
  return reply.code(304).send()
}

/** The 412 of a write whose If-Match names another version than the item's. */
export function preconditionFailed (currentVersion: number): Error {
  return withDetails(new errors.preconditionFailed('The item has changed since the version in If-Match'), { currentVersion })
}

/** The versions an If-Match header accepts, or null without one; a malformed header is a 400. */
function expectedVersions (request: FastifyRequest): number[] | 'any' | null {
  const header = request.headers['if-match']
  const versions = ifMatchVersions(Array.isArray(header) ? header.join(',') : header)
  if (versions === 'invalid') {
    throw withDetails(new errors.validation('The request is not valid'), {
      issues: [{ path: '/headers/if-match', message: 'must be a list of versions in double quotes, such as "3", or *' }]
    })
  }
  return versions
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

function read (request: FastifyRequest, locator: Locator): unknown {
  const [part, key] = locator.split('.') as ['params' | 'body' | 'query', string]
  const source = request[part] as Record<string, unknown> | undefined
  return source?.[key]
}

/** The caller's family when there is exactly one; otherwise the field is required. */
async function onlyFamily (db: Db, request: FastifyRequest, locator: Locator): Promise<number> {
  const families = await familyIdsOf(db, request.user.id)
  if (families.length === 1) return families[0]
  const path = '/' + locator.replace('.', '/')
  throw withDetails(new errors.validation('The request is not valid'), {
    issues: [{ path, message: families.length === 0 ? 'is required: you belong to no family' : 'is required when you belong to several families' }]
  })
}

function defaultName (target: Target): string {
  if ('family' in target) return 'Family'
  if ('child' in target) return 'Child'
  return 'Record'
}

/** A read's ETag, from the target's version or from the URL and the clock of what it shows. */
function readTag (request: FastifyRequest, options: ScopeOptions, resolved: Resolved): string | null {
  if (options.etag === 'version') return resolved.version === null ? null : versionTag(resolved.version)
  if (options.etag !== undefined && resolved.clock !== null) return clockTag(request.url, options.daily === true ? `${resolved.clock}.${utcToday()}` : resolved.clock)
  return null
}

const JSON_TYPE = 'application/json; charset=utf-8'

/**
 * The one place that decides who may do what.
 *
 * `authenticate` runs first on every protected route: a valid access token of
 * an active session of an enabled user, read from the database on every
 * request, so that revocation takes effect at once.
 *
 * `familyScope` then decides, before the handler runs, whether the caller may
 * touch a family's data: it resolves the target (a family, a child, or a
 * record through its child) to its family and the caller's role there, in one
 * query. A target that does not exist is a 404, one of a family the caller is
 * not in is a 403, and a write below the needed role is a 403. Administrators
 * get no way around it.
 *
 * When the route's target id is in the path or the query string, its lookup
 * rides along in the authentication's statement: one round trip instead of
 * two. The scope still decides.
 */
export default fp(async function access (fastify) {
  fastify.decorateRequest('scope', null as unknown as Scope)
  fastify.decorateRequest('prefetchedScope', null)
  fastify.decorateRequest('deferredAccess', false)
  const scopedRoutes = new Map<string, ScopeOptions>()
  const routeScope = (request: FastifyRequest): ScopeOptions | undefined => scopedRoutes.get(`${request.method} ${request.routeOptions.url}`)

  /** The session must be active and its user enabled. */
  function admit (principal: Pick<Principal, 'sessionActive' | 'disabled'> | null | undefined): void {
    if (principal === undefined || principal === null || !principal.sessionActive) throw new errors.unauthorized('The session has ended')
    if (principal.disabled) throw new errors.accountDisabled()
  }

  async function checkSession (request: FastifyRequest, userId: number, sessionId: number): Promise<void> {
    const ahead = prefetchableTarget(scopedRoutes, request)
    const lookup = ahead === null ? null : targetQuery(fastify.sql, userId, ahead.target, ahead.id, ahead.clock)
    const principal = await findPrincipal(fastify.sql, userId, sessionId, lookup)
    admit(principal)
    request.user = { id: userId, role: (principal as Principal).role, sessionId }
    if (ahead !== null) request.prefetchedScope = { locator: ahead.locator, id: ahead.id, resolved: (principal as Principal).target }
  }

  fastify.decorate('authenticate', async function authenticate (request: FastifyRequest) {
    const match = BEARER.exec(request.headers.authorization ?? '')
    if (match === null) throw new errors.unauthorized('A bearer token is required')
    const { userId, sessionId } = fastify.tokens.readAccess(match[1])
    if (routeScope(request)?.oneStatement === true) {
      // The role is read with the write, in the same statement.
      request.user = { id: userId, role: 'user', sessionId }
      request.deferredAccess = true
      return
    }
    await checkSession(request, userId, sessionId)
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
    const hooks = route.preHandler === undefined ? [] : Array.isArray(route.preHandler) ? route.preHandler : [route.preHandler]
    const scoped = hooks.find(hook => (hook as unknown as Record<symbol, unknown>)[SCOPE] !== undefined) as unknown as Record<symbol, ScopeOptions> | undefined
    if (scoped === undefined) return
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) scopedRoutes.set(`${method} ${route.url}`, scoped[SCOPE])
  })

  /** The scope's decision for a request of a route with these options; a reply it answered itself, or nothing. */
  async function decideScope (request: FastifyRequest, reply: FastifyReply, options: ScopeOptions): Promise<FastifyReply | undefined> {
    const name = options.name ?? defaultName(options.target)
    const reads = options.etag !== undefined
    const method = request.method
    const needed = options.role ?? (method === 'GET' || method === 'HEAD' ? 'viewer' : 'member')
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
      : await resolveTarget(fastify.sql, request.user.id, target, id, clockFor(options))
    if (resolved === undefined) throw new errors.notFound(name)
    if (resolved.role === null) throw new errors.forbidden()
    const acting = options.self !== undefined && read(request, options.self) === request.user.id
    if (!acting && !covers(resolved.role, needed)) throw new errors.forbidden()

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
    if (!reads || (method !== 'GET' && method !== 'HEAD')) return
    // Decided after the scope, exactly as the 200 would have been.
    const etag = readTag(request, options, resolved)
    if (etag === null) return
    reply.header('etag', etag)
    const header = request.headers['if-none-match']
    if (noneMatch(Array.isArray(header) ? header.join(',') : header, etag)) return notModified(reply)
    if (options.cache !== true) return
    const kept = fastify.responses.get(request.url, etag)
    if (kept !== undefined) return reply.type(JSON_TYPE).send(kept)
    request.cacheKey = { url: request.url, etag }
  }

  fastify.decorate('familyScope', function (options: ScopeOptions): preHandlerAsyncHookHandler {
    const scope: preHandlerAsyncHookHandler = async function scope (request, reply) {
      if (request.deferredAccess) return
      return await decideScope(request, reply, options)
    }
    return Object.assign(scope, { [SCOPE]: options })
  })

  fastify.decorate('completeAccess', async function completeAccess (request: FastifyRequest, reply: FastifyReply) {
    if (!request.deferredAccess) return
    request.deferredAccess = false
    await checkSession(request, request.user.id, request.user.sessionId)
    await decideScope(request, reply, routeScope(request) as ScopeOptions)
  })

  fastify.decorate('decideCreate', function decideCreate (request: FastifyRequest, found: CheckedCreate) {
    const options = routeScope(request) as ScopeOptions
    admit(found.principal)
    request.user = { ...request.user, role: (found.principal as NonNullable<CheckedCreate['principal']>).role }
    const target = found.target
    if (target === null) throw new errors.notFound(options.name ?? defaultName(options.target))
    if (target.role === null || !covers(target.role, options.role ?? 'member')) throw new errors.forbidden()
    request.scope = {
      familyId: target.familyId,
      childId: read(request, locatorOf(options.target)) as number,
      childBirth: target.childBirth,
      role: target.role,
      version: null,
      expectedVersion: null
    }
    return target
  })

  fastify.decorate('answerRead', async function answerRead (request: FastifyRequest, reply: FastifyReply, body: () => Fragment) {
    const options = routeScope(request) as ScopeOptions
    const clock = clockFor(options)
    if (clock === null) throw new Error('a read in one statement needs the clock of what it shows')
    const locator = locatorOf(options.target)
    const id = read(request, locator)
    const name = options.name ?? defaultName(options.target)
    const header = request.headers['if-none-match']
    const hash = urlHash(request.url)
    const clientClock = clockOfTag(Array.isArray(header) ? header.join(',') : header, request.url, hash)
    const kept = options.cache === true ? fastify.responses.latest(request.url) : undefined
    const keptClock = kept === undefined ? null : clockOfTag(kept.etag, request.url, hash)
    const held = [clientClock, keptClock].filter((known): known is string => known !== null)
    // When an answer is held, by this instance or by the client, it most
    // likely still serves: the statement asks only for the session and the
    // scope, and the answer is read apart in the rare case it does not serve.
    // Otherwise the answer is written in the same statement.
    const { id: userId, sessionId } = request.user
    let found: CheckedRead | undefined
    if (typeof id !== 'number') found = undefined
    else if (held.length > 0) {
      const principal = await findPrincipal(fastify.sql, userId, sessionId, targetQuery(fastify.sql, userId, options.target, id, clock))
      found = principal === undefined ? undefined : { ...principal, body: null }
    } else found = await readChecked(fastify.sql, { userId, sessionId }, options.target, id, clock, body())
    admit(found)
    request.deferredAccess = false
    request.user = { ...request.user, role: (found as NonNullable<typeof found>).role }
    const resolved = (found as NonNullable<typeof found>).target
    if (resolved === null) throw new errors.notFound(name)
    if (resolved.role === null) throw new errors.forbidden()
    request.scope = { familyId: resolved.familyId, childId: resolved.childId, childBirth: resolved.childBirth, role: resolved.role, version: resolved.version, expectedVersion: null }
    const etag = clockTag(request.url, resolved.clock as string, hash)
    reply.header('etag', etag)
    if (clientClock === resolved.clock) return notModified(reply)
    if (kept !== undefined && keptClock === resolved.clock) {
      fastify.responses.count(true)
      return reply.type(JSON_TYPE).send(kept.body)
    }
    if (options.cache === true) fastify.responses.count(false)
    const answer = held.length > 0
      ? (await fastify.sql<{ body: string | null }[]>`select ${body()} as body`)[0].body
      : (found as NonNullable<typeof found>).body
    if (answer === null) throw new Error('the database wrote no answer for a read it allowed')
    if (options.cache === true) fastify.responses.set(request.url, etag, answer)
    return reply.type(JSON_TYPE).send(answer)
  })
}, { name: 'access', dependencies: ['db', 'tokens', 'response-cache'] })
