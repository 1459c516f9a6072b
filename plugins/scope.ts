import type { FastifyInstance, FastifyRequest, preHandlerAsyncHookHandler, RouteOptions } from 'fastify'
import { errors, withDetails } from '../lib/errors'
import { ifMatchVersions } from '../lib/etag'
import { covers, FAMILY_ROLES, type FamilyRole } from '../lib/roles'
import type { ClockOf, TargetKind } from '../sql/access'
import { listOf } from '../lib/lists'

/** What a target of a kind names, as sql/access.ts resolves it: a record's table, or the kind whose history it is. */
type Named<K extends 'record' | 'history'> = Extract<TargetKind, Record<K, unknown>>[K]

// What a route asks of the family scope, and what the scope resolved.

/** Where the id of the target is read: a path parameter, a body field or a query parameter. */
export type Locator = `params.${string}` | `body.${string}` | `query.${string}`

export type Target =
  | { family: Locator }
  | { child: Locator }
  | { record: Named<'record'>, at: Locator }
  | { history: Named<'history'>, at: Locator }
  | { share: Locator }

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
  /**
   * A read's ETag, and a 304 when If-None-Match names it: the target's own
   * version (`version`), or a tag of the URL and the clock of the child's or
   * the family's changes (`child`, `family`).
   */
  etag?: 'version' | ClockOf
  /**
   * The answer also depends on the day (it counts days from today, UTC): the
   * day is part of its clock ETag, so that an answer of yesterday is not kept.
   */
  daily?: boolean
  /** A write of the target itself honours If-Match with its version: 412 when it differs. */
  ifMatch?: boolean
  /**
   * The answer is the same for every caller allowed to read it, so it is kept
   * in the cache of answers under its URL and ETag, and served from there
   * while the ETag is current. Needs `etag`.
   */
  cache?: boolean
}

/** Where a route's target id is read. */
export function locatorOf (target: Target): Locator {
  if ('family' in target) return target.family
  if ('child' in target) return target.child
  return 'share' in target ? target.share : target.at
}

/** The clock a route's ETag is made of, if any. */
export function clockFor (options: ScopeOptions): ClockOf {
  return options.etag === 'child' || options.etag === 'family' ? options.etag : null
}

/** A value of the request at a locator: a path parameter, a body field or a query parameter. */
export function read (request: FastifyRequest, locator: Locator): unknown {
  const [part, key] = locator.split('.') as ['params' | 'body' | 'query', string]
  const source = request[part] as Record<string, unknown> | undefined
  return source?.[key]
}

/** What a route's target is called in a 404, unless the route names it. */
export function defaultName (target: Target): string {
  if ('family' in target) return 'Family'
  if ('child' in target) return 'Child'
  if ('share' in target) return 'Share'
  return 'Record'
}

/** What the scope resolved, for the handler to trust. */
export interface Scope {
  familyId: number
  childId: number | null
  /** The child's date of birth, for the rules on record dates. */
  childBirth: string | null
  role: FamilyRole
  /** The target's version when the scope was decided. */
  version: number | null
  /** The version an If-Match header asked for: the write must find it unchanged, or it is a 412. */
  expectedVersion: number | null
}

/** Where a request keeps its scope: null until the family scope has decided. */
const held: unique symbol = Symbol('scope')

declare module 'fastify' {
  interface FastifyRequest {
    [held]: Scope | null
  }
}

/**
 * Decorates requests with `scope`, what the family scope resolved. Reading it
 * before the scope has decided is an error; `scopeOf` reads it or null.
 */
export function decorateScope (fastify: FastifyInstance): void {
  fastify.decorateRequest(held, null)
  fastify.decorateRequest('scope', {
    getter (this: FastifyRequest): Scope {
      const scope = this[held]
      if (scope === null) throw new Error('request.scope is read before the family scope decided it')
      return scope
    },
    setter (this: FastifyRequest, scope: Scope): void {
      this[held] = scope
    }
  })
}

/** What the family scope resolved for a request, or null when it decided nothing. */
export function scopeOf (request: FastifyRequest): Scope | null {
  return request[held]
}

const SCOPE = Symbol('scope options')

/** A family scope's preHandler, marked with its options so that its routes can be told apart. */
export function markScope (scope: preHandlerAsyncHookHandler, options: ScopeOptions): preHandlerAsyncHookHandler {
  return Object.assign(scope, { [SCOPE]: options })
}

/** The options of a route's family scope, or undefined for a route without one. */
export function routeScope (route: Pick<RouteOptions, 'preHandler'>): ScopeOptions | undefined {
  const scoped = listOf(route.preHandler).find(hook => (hook as unknown as Record<symbol, unknown>)[SCOPE] !== undefined) as unknown as Record<symbol, ScopeOptions> | undefined
  return scoped?.[SCOPE]
}

/** The 412 of a write whose If-Match names another version than the item's. */
export function preconditionFailed (currentVersion: number): Error {
  return withDetails(new errors.preconditionFailed('The item has changed since the version in If-Match'), { currentVersion })
}

/** The versions an If-Match header accepts, or null without one; a malformed header is a 400. */
export function expectedVersions (request: FastifyRequest): number[] | 'any' | null {
  const header = request.headers['if-match']
  const versions = ifMatchVersions(Array.isArray(header) ? header.join(',') : header)
  if (versions === 'invalid') {
    throw withDetails(new errors.validation('The request is not valid'), {
      issues: [{ path: '/headers/if-match', message: 'must be a list of versions in double quotes, such as "3", or *' }]
    })
  }
  return versions
}


/** The roles that may do what `needed` may. */
export function rolesCovering (needed: FamilyRole): FamilyRole[] {
  return FAMILY_ROLES.filter(role => covers(role, needed))
}


/** The least role a request of a route needs: the route's, or `viewer` for reads and `member` for writes. */
export function neededRole (request: FastifyRequest, options: ScopeOptions): FamilyRole {
  return options.role ?? (request.method === 'GET' || request.method === 'HEAD' ? 'viewer' : 'member')
}
