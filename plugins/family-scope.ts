import fp from 'fastify-plugin'
import type { FastifyRequest, preHandlerAsyncHookHandler } from 'fastify'
import { errors, withDetails } from '../lib/errors'
import { resolveTarget, type RecordTable } from '../sql/scope'
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

declare module 'fastify' {
  interface FastifyRequest {
    scope: Scope
  }
  interface FastifyInstance {
    familyScope: (options: ScopeOptions) => preHandlerAsyncHookHandler
  }
}

const RANK: Record<FamilyRole, number> = { viewer: 1, member: 2, owner: 3 }

function read (request: FastifyRequest, locator: Locator): unknown {
  const [part, key] = locator.split('.') as ['params' | 'body' | 'query', string]
  const source = request[part] as Record<string, unknown> | undefined
  return source?.[key]
}

/** The caller's family when there is exactly one; otherwise the field is required. */
function onlyFamily (request: FastifyRequest, locator: Locator): number {
  const families = [...request.user.families.keys()]
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

  fastify.decorate('familyScope', function (options: ScopeOptions): preHandlerAsyncHookHandler {
    const name = options.name ?? defaultName(options.target)
    return async function scope (request) {
      const method = request.method
      const needed = options.role ?? (method === 'GET' || method === 'HEAD' ? 'viewer' : 'member')
      const target = options.target
      const locator = 'family' in target ? target.family : 'child' in target ? target.child : target.at
      let id = read(request, locator)
      if (id === undefined || id === null) {
        if (options.whenAbsent === 'skip') return
        if (options.whenAbsent === 'only-family') id = onlyFamily(request, locator)
      }
      if (typeof id !== 'number') throw new errors.notFound(name)

      const resolved = await resolveTarget(fastify.sql, request.user.id, target, id)
      if (resolved === undefined) throw new errors.notFound(name)
      if (resolved.role === null) throw new errors.forbidden()
      const acting = options.self !== undefined && read(request, options.self) === request.user.id
      if (!acting && RANK[resolved.role] < RANK[needed]) throw new errors.forbidden()
      request.scope = { familyId: resolved.familyId, childId: resolved.childId, childBirth: resolved.childBirth, role: resolved.role }
    }
  })
}, { name: 'family-scope', dependencies: ['db', 'auth'] })
