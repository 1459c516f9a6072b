import fp from 'fastify-plugin'
import type { FastifyRequest, preHandlerAsyncHookHandler } from 'fastify'
import { errors, withDetails } from '../lib/errors'
import { resolveTarget, type RecordTable, type Resolved } from '../sql/scope'
import { familyIdsOf } from '../sql/families'
import type { Db } from './db'
import type { FamilyRole } from '../sql/sessions'

/** Where the id of the target is read: a path parameter, a body field or a query parameter. */
export type Locator = `params.${string}` | `body.${string}` | `query.${string}`

export type Target =
  | { family: Locator }
  | { child: Locator }
  | { record: RecordTable, at: Locator }

export interface ScopeOptions {
  target: Target
  /** The least role that may pass: by default `viewer` for reads and `member` for writes. */
  role?: FamilyRole
  /** A path parameter naming a user: a caller acting on themselves needs only to be a member (leaving a family). */
  self?: Locator
  /** What the target is called in a 404. */
  name?: string
  /** When the locator is empty: skip the check (`skip`), or use the caller's only family (`only-family`). */
  whenAbsent?: 'skip' | 'only-family'
}

/** What the scope resolved, for the handler to trust. */
export interface Scope {
  familyId: number
  childId: number | null
  /** The child's date of birth, for the rules on record dates. */
  childBirth: string | null
  role: FamilyRole
}

/** A target the authentication looked up ahead, in its own query, for the scope to use. */
export interface Prefetched {
  locator: Locator
  id: number
  resolved: Resolved | null
}

declare module 'fastify' {
  interface FastifyRequest {
    scope: Scope
    prefetchedScope: Prefetched | null
  }
  interface FastifyInstance {
    familyScope: (options: ScopeOptions) => preHandlerAsyncHookHandler
    /** The scope of each route, by `METHOD url`. */
    scopedRoutes: Map<string, ScopeOptions>
  }
}

const SCOPE = Symbol('scope options')

function locatorOf (target: Target): Locator {
  return 'family' in target ? target.family : 'child' in target ? target.child : target.at
}

/**
 * The target of a request's route, when its id is in the path or the query
 * string, so that authentication can look it up in the same statement as the
 * caller. The scope still decides: this only saves it a round trip.
 */
export function prefetchableTarget (scopedRoutes: Map<string, ScopeOptions>, request: FastifyRequest): { target: Target, locator: Locator, id: number } | null {
  const options = scopedRoutes.get(`${request.method} ${request.routeOptions.url}`)
  if (options === undefined) return null
  const locator = locatorOf(options.target)
  if (locator.startsWith('body.')) return null
  const raw = read(request, locator)
  if (typeof raw !== 'string' || !/^[1-9]\d{0,9}$/.test(raw)) return null
  const id = Number(raw)
  return id <= 2147483647 ? { target: options.target, locator, id } : null
}

const RANK: Record<FamilyRole, number> = { viewer: 1, member: 2, owner: 3 }

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

/**
 * The one place that decides whether the caller may touch a family's data.
 * Before the handler runs, it resolves the target (a family, a child, or a
 * record through its child) to its family and the caller's role there, in one
 * query: a target that does not exist is a 404, one of a family the caller is
 * not in is a 403, and a write below the needed role is a 403. Administrators
 * get no way around it.
 */
export default fp(async function familyScope (fastify) {
  fastify.decorateRequest('scope', null as unknown as Scope)
  fastify.decorateRequest('prefetchedScope', null)
  const scopedRoutes = new Map<string, ScopeOptions>()
  fastify.decorate('scopedRoutes', scopedRoutes)
  fastify.addHook('onRoute', route => {
    const hooks = route.preHandler === undefined ? [] : Array.isArray(route.preHandler) ? route.preHandler : [route.preHandler]
    const scoped = hooks.find(hook => (hook as unknown as Record<symbol, unknown>)[SCOPE] !== undefined) as unknown as Record<symbol, ScopeOptions> | undefined
    if (scoped === undefined) return
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) scopedRoutes.set(`${method} ${route.url}`, scoped[SCOPE])
  })

  fastify.decorate('familyScope', function (options: ScopeOptions): preHandlerAsyncHookHandler {
    const name = options.name ?? defaultName(options.target)
    const scope: preHandlerAsyncHookHandler = async function scope (request) {
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
        : await resolveTarget(fastify.sql, request.user.id, target, id)
      if (resolved === undefined) throw new errors.notFound(name)
      if (resolved.role === null) throw new errors.forbidden()
      const acting = options.self !== undefined && read(request, options.self) === request.user.id
      if (!acting && RANK[resolved.role] < RANK[needed]) throw new errors.forbidden()
      request.scope = { familyId: resolved.familyId, childId: resolved.childId, childBirth: resolved.childBirth, role: resolved.role }
    }
    return Object.assign(scope, { [SCOPE]: options })
  })
}, { name: 'family-scope', dependencies: ['db', 'auth'] })
