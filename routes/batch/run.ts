import type { FastifyInstance, FastifyRequest, LightMyRequestResponse } from 'fastify'
import { inTransaction, type Handed } from '../../db/handover'
import { limitStatements, type Db } from '../../db/client'
import { errors, withDetails } from '../../lib/errors'
import { answerFor } from '../../plugins/errors'
import type { OperationBody, Result } from './schemas'

/** A request a batch sends through the app: an operation, or the read of a 412's current item. */
type Sendable = Pick<OperationBody, 'path' | 'body' | 'ifMatch' | 'idempotencyKey'> & { method: string }

/** A plain path of the API: no query string, no dot segments, nothing encoded. */
const PLAIN_PATH = /^\/api(\/[A-Za-z0-9_~-][A-Za-z0-9._~-]*)+$/

/** Why an operation cannot run in a batch: the issue of its 400, or null when it can. */
export function refusal (fastify: FastifyInstance, familyId: number, operation: OperationBody, at: number): { path: string, message: string } | null {
  const where = `/body/operations/${at}`
  if (!PLAIN_PATH.test(operation.path)) {
    return { path: `${where}/path`, message: 'must be a path of the API under /api, without a query string, dot segments or encoded characters' }
  }
  const found = fastify.batchRoutes.find(operation.method, operation.path)
  if (found === undefined) {
    return { path: `${where}/path`, message: `${operation.method} ${operation.path} cannot run in a batch: only JSON writes of the family's children, records and family routes can (no upload, import, export, stream, account, administration or sign-in route)` }
  }
  const target = found.route.scope.target
  if ('family' in target) {
    const [part, name] = target.family.split('.')
    if (part === 'params' && found.params[name] !== String(familyId)) return { path: `${where}/path`, message: 'names another family than the batch\'s' }
    const named = part === 'body' && operation.body !== null && typeof operation.body === 'object' ? (operation.body as Record<string, unknown>)[name] : undefined
    if (named !== undefined && named !== null && named !== familyId) return { path: `${where}/body/${name}`, message: 'names another family than the batch\'s' }
  }
  return null
}

/** The 400 of an operation refused before anything ran. */
export function refused (issue: { path: string, message: string }): Result {
  return { status: 400, body: { error: 'The operation cannot run in this batch', code: 'VALIDATION_ERROR', details: { issues: [issue] } } }
}

/** The result of an operation of an atomic batch not run because an earlier one failed. */
export function notRun (failed: number): Result {
  return { status: 424, body: { error: `Not run: operation ${failed} of this atomic batch failed, and nothing was written`, code: 'FAILED_DEPENDENCY', details: { failedOperation: failed } } }
}

/** An answer of the app as a batch's result. */
export function resultOf (response: LightMyRequestResponse): Result {
  const type = String(response.headers['content-type'] ?? '')
  const body: unknown = response.body === '' ? null : type.includes('json') ? JSON.parse(response.body) : response.body
  const result: Result = { status: response.statusCode, body }
  const version = (body as { version?: unknown } | null)?.version
  // A write answers its item without an ETag: the result names it, as the item's GET would.
  if (typeof response.headers.etag === 'string') result.etag = response.headers.etag
  else if (response.statusCode < 300 && Number.isInteger(version)) result.etag = `"${version as number}"`
  if (typeof response.headers.location === 'string') result.location = response.headers.location
  return result
}

/** An operation whose transaction failed though it answered: the error's answer instead. */
export function failedResult (request: FastifyRequest, error: unknown, production: boolean): Result {
  const answer = answerFor(error as Parameters<typeof answerFor>[0], request, production)
  return { status: answer.status, body: answer.body }
}

/**
 * Sends one operation through the app, as its own request with the batch's
 * credentials: the same validation, access decision and rules as the single
 * request. It runs in the transaction handed to it, if any.
 */
export async function send (fastify: FastifyInstance, request: FastifyRequest, operation: Sendable, at: number, handed: Handed | null): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = { 'x-request-id': `${request.id}-${at}`.slice(0, 64) }
  const authorization = request.headers.authorization
  if (authorization !== undefined) headers.authorization = authorization
  if (operation.ifMatch != null) headers['if-match'] = operation.ifMatch
  if (operation.idempotencyKey != null) headers['idempotency-key'] = operation.idempotencyKey
  const hasBody = operation.body !== undefined && operation.body !== null
  if (hasBody) headers['content-type'] = 'application/json'
  const options = {
    method: operation.method as 'POST',
    url: operation.path,
    headers,
    remoteAddress: request.ip,
    ...(hasBody ? { payload: JSON.stringify(operation.body) } : {})
  }
  return handed === null ? await fastify.inject(options) : await fastify.injectHanded(handed, options)
}

/** Runs an operation in a transaction of its own (a savepoint of the one the batch is held in): what it wrote commits whatever it answered, as a single request's would. */
export async function runAlone (fastify: FastifyInstance, request: FastifyRequest, familyId: number, operation: OperationBody, at: number): Promise<Result> {
  let response: LightMyRequestResponse | undefined
  try {
    await inTransaction(request.handed ?? fastify.sql, async handed => { response = await send(fastify, request, operation, at, handed) }, { familyId })
  } catch (error) {
    // A refusal whose statement failed rolled its transaction back; its answer stands.
    if (response === undefined || response.statusCode < 400) return failedResult(request, error, fastify.config.production)
  }
  return resultOf(response as LightMyRequestResponse)
}

/** Thrown to roll an atomic batch back at its first failure. */
class RollBack extends Error {}

/**
 * The time the operations of a batch that share one transaction may take:
 * checked before each operation, and no statement of theirs runs longer.
 */
export class Deadline {
  private readonly end: number

  /** `statementMs`: the connections' own statement_timeout, which a longer limit leaves as it is. */
  constructor (readonly limitMs: number, readonly operations: number, private readonly statementMs: number) {
    this.end = performance.now() + limitMs
  }

  /** Cuts every later statement of the transaction at the whole limit, when it is shorter than the connections' own. */
  async bound (db: Db): Promise<void> {
    if (this.limitMs < this.statementMs) await limitStatements(db, this.limitMs)
  }

  /** Throws 422 BATCH_TOO_LONG, naming operation `at`, once the time has passed. */
  check (at: number): void {
    if (performance.now() < this.end) return
    const message = `The batch ran past its limit of ${this.limitMs} ms at operation ${at} of its ${this.operations} (counted from 0), and nothing was written: send its operations in smaller batches`
    throw withDetails(new errors.batchTooLong(message), { limitMs: this.limitMs, operation: at, operations: this.operations })
  }

  /** After an operation's result: one cut by the statement limit (503) once the time has passed ran too long. */
  checkResult (result: Result, at: number): void {
    if (result.status === 503) this.check(at)
  }
}

/**
 * Runs every operation in one transaction, in order: the first that fails
 * (any status from 400) rolls them all back, and the rest are not run; so
 * does the deadline, with 422 BATCH_TOO_LONG. Answers the results and the
 * index of the failed operation, or null.
 */
export async function runAtomic (fastify: FastifyInstance, request: FastifyRequest, familyId: number, operations: OperationBody[], deadline: Deadline): Promise<{ results: Result[], failed: number | null }> {
  const results: Result[] = []
  let failed: number | null = null
  try {
    await inTransaction(request.handed ?? fastify.sql, async handed => {
      await deadline.bound(handed.tx)
      for (const [at, operation] of operations.entries()) {
        deadline.check(at)
        const result = resultOf(await send(fastify, request, operation, at, handed))
        results.push(result)
        if (result.status >= 400) {
          deadline.checkResult(result, at)
          failed = at
          throw new RollBack()
        }
      }
    }, { familyId })
  } catch (error) {
    if (!(error instanceof RollBack)) throw error
  }
  if (failed !== null) for (let at = failed + 1; at < operations.length; at += 1) results.push(notRun(failed))
  return { results, failed }
}
