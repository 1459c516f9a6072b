import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { Type } from '@sinclair/typebox'
import { errorResponses, operations } from '../../lib/schemas'
import { Deadline, notRun, refusal, refused, resultOf, runAlone, runAtomic, send } from './run'
import { BatchBody, BatchParams, batchSchemas, MAX_OPERATIONS, type OperationBody, type Result } from './schemas'

const operation = operations(['families'])

const DESCRIPTION = [
  `Runs up to ${MAX_OPERATIONS} writes of the family, in order, each as its own request would run: the same validation, access rules (a viewer's write is 403, a child of another family 403) and rules between records, with its own If-Match (ifMatch) and Idempotency-Key (idempotencyKey).`,
  'Only JSON writes of this family\'s children, records and family routes: an operation on any other route (uploads, imports, exports, streams, the caller\'s account, administration, sign-in, another family) is refused with a 400 naming it before anything runs.',
  'atomic: true runs all in one transaction: the first operation that fails (any status from 400, a 412 included) rolls every one back; its result says why, those before it say what they would have been, those after are 424 FAILED_DEPENDENCY, and rolledBack is true. An operation refused before anything runs fails an atomic batch the same way.',
  'atomic: false (the default) runs each in a transaction of its own: a failed operation leaves the others written.',
  'A 412 result carries, beside details.currentVersion, details.current: the item as its GET answers it once the batch is over, so that the client can merge.',
  'Each write is recorded in the change log as the single request would be, one change an operation, and reaches the changes feed and the event streams once committed.',
  'While a transaction is open, the changes feed of every family waits for it; so the operations of a batch that share one transaction (atomic: true, or any batch sent with an Idempotency-Key, whose operations run in the key\'s transaction) have BATCH_ATOMIC_TIMEOUT_MS (10 s by default) from the transaction\'s start: the time is checked before each operation and no statement of theirs runs longer. Past it, the batch rolls back whole and answers 422 BATCH_TOO_LONG, whose details give limitMs, operation (the index, from 0, of the operation it had reached) and operations; nothing is written. A batch with atomic: false and no Idempotency-Key commits each operation on its own and has no such limit.'
].join(' ')

const TOO_LONG = Type.Ref('Error', {
  description: 'BATCH_TOO_LONG: the operations sharing one transaction ran past BATCH_ATOMIC_TIMEOUT_MS, and nothing was written (details.limitMs, details.operation, details.operations); or IDEMPOTENCY_KEY_REUSED: the Idempotency-Key was used with another request'
})

/** A 412's details with the item as it is now, as its GET answers it (null when it is gone or cannot be read). */
async function withCurrent (fastify: Parameters<FastifyPluginAsyncTypebox>[0], request: FastifyRequest, operation: OperationBody, result: Result, at: number): Promise<Result> {
  const body = result.body as { details?: Record<string, unknown> } | null
  if (result.status !== 412 || body?.details === undefined) return result
  const read = await send(fastify, request, { method: 'GET', path: operation.path }, at, request.handed)
  const current = read.statusCode === 200 ? resultOf(read).body : null
  return { ...result, body: { ...body, details: { ...body.details, current } } }
}

/** Writes of a family sent together: offline clients send what they queued in one request. */
const batch: FastifyPluginAsyncTypebox = async function (fastify) {
  for (const schema of batchSchemas) fastify.addSchema(schema)

  /**
   * Runs each operation in a transaction of its own; inside the transaction
   * of the request's Idempotency-Key, they share it, and `deadline` bounds them.
   */
  async function runEach (request: FastifyRequest, operations: OperationBody[], refusals: Array<ReturnType<typeof refusal>>, deadline: Deadline | null): Promise<Result[]> {
    const familyId = request.scope.familyId
    if (deadline !== null) await deadline.bound(request.db)
    const results: Result[] = []
    for (const [at, operation] of operations.entries()) {
      deadline?.check(at)
      const issue = refusals[at]
      const result = issue === null ? await runAlone(fastify, request, familyId, operation, at) : refused(issue)
      deadline?.checkResult(result, at)
      results.push(result)
    }
    return results
  }

  fastify.post('/api/families/:id/batch', {
    // Any member: each operation is then decided as its own request.
    preHandler: fastify.familyScope({ target: { family: 'params.id' }, role: 'viewer' }),
    config: { batch: false },
    schema: operation('runFamilyBatch', 'Run several writes of the family in one request, atomically or not', {
      description: DESCRIPTION,
      params: BatchParams, body: BatchBody,
      response: { 200: Type.Ref('BatchAnswer'), ...errorResponses(400, 401, 403, 404, 413), 422: TOO_LONG }
    })
  }, async request => {
    const familyId = request.scope.familyId
    const { operations, atomic = false } = request.body as { operations: OperationBody[], atomic?: boolean }
    const refusals = operations.map((operation, at) => refusal(fastify, familyId, operation, at))
    let results: Result[]
    let failed: number | null = null
    const firstRefused = refusals.findIndex(issue => issue !== null)
    const deadline = new Deadline(fastify.config.batchAtomicTimeout, operations.length, fastify.config.statementTimeout)
    if (atomic && firstRefused !== -1) {
      // Nothing runs: the refused operations say why, the others that they were not run.
      failed = firstRefused
      results = refusals.map(issue => issue === null ? notRun(firstRefused) : refused(issue))
    } else if (atomic) {
      ({ results, failed } = await runAtomic(fastify, request, familyId, operations, deadline))
    } else {
      results = await runEach(request, operations, refusals, request.handed !== null ? deadline : null)
    }
    for (const [at, result] of results.entries()) results[at] = await withCurrent(fastify, request, operations[at], result, at)
    return { results, rolledBack: failed !== null, failedOperation: failed }
  })
}

export default batch
