import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify'
import type { PendingQuery, Row } from 'postgres'
import { errors, invalidRequest } from '../../lib/errors'
import type { FamilyRole } from '../../lib/roles'
import { admitTarget, callerOf, type ScopeOptions } from '../../plugins/access'
import { admit } from '../../plugins/authentication'
import { clockFor, defaultName, locatorOf, markScope, neededRole, read, rolesCovering } from '../../plugins/scope'
import { createChecked, findPrincipal, readChecked, targetQuery, type Resolved } from '../../sql/access'
import { insertFrom } from '../../sql/records'
import type { RegisteredKind } from '../../kinds'
import { NO_VISIT, ownDate, ruleIssues } from '../../kinds/rules'

// The records' reads and creates decided in the statement that reads their
// answer or writes their record: one round trip. Authentication reads only
// the token (`session: 'statement'`); the session, the family scope and the
// rules are decided here, from what sql/access.ts found.

type Fragment = PendingQuery<Row[]>
type Values = Record<string, unknown>

const JSON_TYPE = 'application/json; charset=utf-8'

/** The config of a route decided in its own statement: its family scope, and its session checked there. */
export function inStatement (scope: ScopeOptions) {
  return { scope, session: 'statement' as const }
}

/** What a statement found of the caller and the target. */
interface Found {
  principal: { role: 'admin' | 'user', disabled: boolean, sessionActive: boolean } | null | undefined
  target: { familyId: number, childId: number | null, childBirth: string | null, role: FamilyRole | null, version: number | null } | null
}

/**
 * The one place a statement's refusals become errors, in the order of any
 * route's checks: 401 (a session ended, or a disabled account), 404, 403.
 * Once allowed, the request carries its user's role and its family scope.
 */
function decided (request: FastifyRequest, options: ScopeOptions, found: Found): NonNullable<Found['target']> {
  admit(found.principal)
  request.user = { ...request.user, role: found.principal.role }
  const target = found.target
  admitTarget(request, options.name ?? defaultName(options.target), target, neededRole(request, options))
  const { familyId, childId, childBirth, role, version } = target
  request.scope = { familyId, childId, childBirth, role, version, expectedVersion: null }
  return target
}

/**
 * A list decided and answered in one statement: 401, 404 or 403, a 304 when
 * If-None-Match names the current ETag, this instance's kept answer when it
 * has that ETag; otherwise the page the database wrote as JSON.
 */
export function listInStatement (fastify: FastifyInstance, options: ScopeOptions, page: (request: FastifyRequest) => Fragment) {
  const clock = clockFor(options)
  if (clock === null) throw new Error('a read in one statement needs the clock of what it shows')
  const cache = options.cache === true
  return async function list (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const id = read(request, locatorOf(options.target))
    const held = fastify.conditional.held(request, cache)
    // When an answer is held, by this instance or by the client, it most
    // likely still serves: the statement asks only for the session and the
    // scope, and the answer is read apart in the rare case it does not serve.
    // Otherwise the answer is written in the same statement.
    const { id: userId, sessionId } = request.user
    const caller = callerOf(request.user)
    let found: { role: 'admin' | 'user', disabled: boolean, sessionActive: boolean, target: Resolved | null, body: Buffer | null } | undefined
    if (typeof id !== 'number') found = undefined
    else if (held.any) {
      const principal = await findPrincipal(request.reads, userId, sessionId, targetQuery(request.reads, caller, options.target, id, clock))
      found = principal === undefined ? undefined : { ...principal, body: null }
    } else found = await readChecked(request.db, { caller, sessionId }, options.target, id, clock, page(request))
    decided(request, options, { principal: found, target: found?.target ?? null })
    const { target, body } = found as NonNullable<typeof found>
    const answered = await fastify.conditional.finish(request, reply, held, target?.clock as string, cache, async () => {
      const answer = body ?? (await request.db<Array<{ body: string | null }>>`select ${page(request)} as body`)[0].body
      if (answer === null) throw new Error('the database wrote no answer for a read it allowed')
      return answer
    })
    return typeof answered === 'string' || Buffer.isBuffer(answered) ? reply.type(JSON_TYPE).send(answered) : answered
  }
}

/**
 * The creates of a kind under a child. A plain create is one round trip: the
 * session, the family scope, the rules that need the database and the insert
 * with its change, in one statement (sql/access.ts `createChecked`). A create
 * that writes more than its record (a visit with its measurement), or whose
 * rules read the child apart (a vaccine naming its series), is decided before
 * its handler as any route's, and so is a repeat of an Idempotency-Key.
 */
export function createInStatement (fastify: FastifyInstance, spec: RegisteredKind, options: ScopeOptions) {
  // Builds the insert only: the statement runs on the request's database.
  const { sql } = fastify
  const locator = locatorOf(options.target)
  const scope = fastify.familyScope(options)

  /** Whether the create is written in one statement. */
  function oneStatement (request: FastifyRequest, values: Values): boolean {
    if (request.heldReplay !== null) return false
    if (spec.createsWith !== undefined && values[spec.createsWith.field] != null) return false
    return spec.childRules?.applies(values) !== true
  }

  /** Before the handler: the session and the family scope of a create not written in one statement. */
  const preHandler: preHandlerAsyncHookHandler = async function (request, reply) {
    if (oneStatement(request, valuesOf(request))) return
    await fastify.checkSession(request)
    return await scope.call(this, request, reply)
  }

  /** The create in one statement: the row as the API answers it. Its errors come in the order of a create's checks: 401, 404, 403, then the rules. */
  async function create (request: FastifyRequest, values: Values): Promise<Values> {
    const childId = read(request, locator)
    if (typeof childId !== 'number') throw new errors.notFound(options.name ?? defaultName(options.target))
    const found = await createChecked(request.db, {
      caller: callerOf(request.user),
      sessionId: request.user.sessionId,
      childId,
      dates: spec.dates.map(field => values[field]).filter((value): value is string => typeof value === 'string'),
      visitId: typeof values.visitId === 'number' ? values.visitId : null,
      visitBy: ownDate(spec, values)?.date ?? null,
      rulesOk: ruleIssues(spec, values, null, NO_VISIT).length === 0,
      roles: rolesCovering(neededRole(request, options)),
      family: request.onlyFamily
    }, actor => insertFrom(sql, spec, childId, values, actor))
    const target = decided(request, options, { principal: found.principal, target: found.target === null ? null : { ...found.target, childId, version: null } })
    if (found.created !== null) return spec.present(found.created)
    // Nothing was written: a rule that needs the child does not hold.
    const issues = ruleIssues(spec, values, target.childBirth, { ofChild: found.visitOk, date: found.visitDate })
    if (issues.length > 0) throw invalidRequest(issues)
    throw new Error('the record was not written although every check passed')
  }

  return { preHandler: markScope(preHandler, options), oneStatement, create }
}

/** The values of a create without the child's id. */
export function valuesOf (request: FastifyRequest): Values {
  const values = { ...(request.body as Values) }
  delete values.childId
  return values
}
