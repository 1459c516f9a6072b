import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify'
import type { Db } from '../db/client'
import { errors, withDetails } from '../lib/errors'
import { covers, type FamilyRole } from '../lib/roles'
import { resolveTarget } from '../sql/access'
import { familyIdsOf } from '../sql/families'
import { callerOf } from './authentication'
import {
  clockFor, decorateScope, defaultName, expectedVersions, locatorOf, markScope, neededRole, preconditionFailed, read, routeScope,
  type Locator, type Scope, type ScopeOptions
} from './scope'

export type { Locator, Scope, ScopeOptions, Target } from './scope'
export { callerOf } from './authentication'
export { notModified } from './conditional-reads'
export { preconditionFailed } from './scope'

declare module 'fastify' {
  interface FastifyRequest {
    /** What the family scope resolved; read before it has decided, it throws (plugins/scope.ts). */
    scope: Scope
  }
  interface FastifyInstance {
    familyScope: (options: ScopeOptions) => preHandlerAsyncHookHandler
  }
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
 * Whether a family is out of reach of the request: inside a batch, only the
 * batch's family may be touched, whatever else the caller belongs to.
 */
function outOfReach (request: Pick<FastifyRequest, 'onlyFamily'>, familyId: number): boolean {
  const only = request.onlyFamily
  return only !== null && only !== familyId
}

/**
 * The family scope's verdict on a target it found (or not): 404 when there
 * is none, 403 when the caller is not a member of its family, or that family
 * is out of the request's reach, or the caller's role there is below
 * `needed`. Administrators get no way around it.
 */
export function admitTarget<T extends { familyId: number, role: FamilyRole | null }> (request: Pick<FastifyRequest, 'onlyFamily'>, name: string, found: T | null | undefined, needed: FamilyRole | null): asserts found is T & { role: FamilyRole } {
  if (found === null || found === undefined) throw new errors.notFound(name)
  if (found.role === null || outOfReach(request, found.familyId)) throw new errors.forbidden()
  if (needed !== null && !covers(found.role, needed)) throw new errors.forbidden()
}

/**
 * The family scope: before the handler runs, whether the caller may touch a
 * family's data. It resolves the target (a family, a child, or a record
 * through its child) to its family and the caller's role there, in one query
 * (or in the authentication's, which looked it up ahead). A target that does
 * not exist is a 404, one of a family the caller is not in is a 403, and a
 * write below the needed role is a 403. It answers family, child, role and
 * version, or refuses; a read's ETag and 304 come with it. The handler
 * trusts what it decided.
 */
export default fp(async function access (fastify) {
  decorateScope(fastify)

  // A route's scope is part of its config, where the authentication finds it.
  fastify.addHook('onRoute', route => {
    const scoped = routeScope(route)
    if (scoped !== undefined && route.config?.scope === undefined) route.config = { ...route.config, scope: scoped }
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
      if (options.whenAbsent === 'only-family') id = await onlyFamily(request.db, request, locator)
    }
    if (typeof id !== 'number') throw new errors.notFound(name)

    const prefetched = request.prefetchedScope
    const resolved = prefetched !== null && prefetched.locator === locator && prefetched.id === id
      ? prefetched.resolved ?? undefined
      : await resolveTarget(request.db, callerOf(request.user), target, id, clockFor(options))
    const acting = options.self !== undefined && read(request, options.self) === request.user.id
    admitTarget(request, name, resolved, acting ? null : neededRole(request, options))

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
   * A repeat of an Idempotency-Key, whose first answer the route sends again
   * only past this check, writing nothing: the caller must still act, within
   * its token's family and its batch's, in the role the route needs in the
   * family of the first answer (its target may be gone since: a delete).
   */
  async function admitRepeat (request: FastifyRequest, reply: FastifyReply, options: ScopeOptions): Promise<FastifyReply | undefined> {
    const familyId = request.heldReplay?.familyId ?? null
    if (familyId === null) return await decideScope(request, reply, options)
    const family = await resolveTarget(request.db, callerOf(request.user), { family: null }, familyId)
    const acting = options.self !== undefined && read(request, options.self) === request.user.id
    admitTarget(request, 'Family', family, acting ? null : neededRole(request, options))
  }

  fastify.decorate('familyScope', function (options: ScopeOptions): preHandlerAsyncHookHandler {
    const scope: preHandlerAsyncHookHandler = async function scope (request, reply) {
      if (request.heldReplay !== null) return await admitRepeat(request, reply, options)
      return await decideScope(request, reply, options)
    }
    return markScope(scope, options)
  })
}, { name: 'access', dependencies: ['db', 'handover', 'authentication', 'conditional-reads'] })
