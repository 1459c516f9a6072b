import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest, preHandlerAsyncHookHandler, RouteOptions } from 'fastify'
import { Type, type TSchema } from '@sinclair/typebox'
import { inTransaction, type Handed } from '../db/handover'
import { errors } from '../lib/errors'
import { fingerprint, keepsAnswer, keysOf, KEY_LIFETIME_SECONDS, KEY_PATTERN, KEYED_METHODS, REPLAYED_HEADERS, type StoredAnswer } from '../lib/idempotency'
import { errorResponses } from '../lib/schemas'
import { keepAnswer, keepLockedAnswer, releaseKey, sweepKeys, type KeyedRequest } from '../sql/idempotency-keys'
import { listOf } from '../lib/lists'
import { answerFor } from './errors'
import { keyClaims, type Held } from './idempotency-keys'
import { scopeOf } from './scope'

/**
 * How a route's writes honour Idempotency-Key: `held` (the default) hands
 * the request a transaction that also keeps its answer; `apart` is for a
 * route that commits on connections of its own (the archive import), whose
 * answer is kept just after.
 */
export type KeyHandling = 'held' | 'apart'

declare module 'fastify' {
  interface FastifyContextConfig {
    idempotency?: KeyHandling
  }
  interface FastifyRequest {
    /** The run of a request with an Idempotency-Key, until its answer is kept or given up. */
    idempotency: Run | null
    /**
     * The first answer of the request's Idempotency-Key, answered again once
     * the route's access checks (the family scope among them) have passed:
     * the route's last preHandler sends it, and nothing before it writes.
     */
    heldReplay: Held | null
  }
}

interface Ended {
  kept: boolean
  answer: StoredAnswer
}

interface Run {
  keyed: KeyedRequest
  /** The claim of a key claimed on its own; null inside another's transaction, which holds the key. */
  claim: string | null
  handling: KeyHandling
  end: (ended: Ended) => void
  ended: Promise<Ended>
  finished: Promise<StoredAnswer> | null
  heartbeat: NodeJS.Timeout | null
  settled: boolean
  /** The family the request acted in, once its answer is known. */
  familyId: number | null
}

/** The request ended without an answer to keep: its work rolls back. */
class NotKept extends Error {}
/** A refusal: its work rolls back, its answer is kept. */
class Refused extends Error {
  constructor (readonly answer: StoredAnswer) { super('refused') }
}
/** Another run took the key meanwhile: this one's work rolls back. */
class ClaimLost extends Error {}

const KEY_HEADER = Type.String({
  pattern: KEY_PATTERN,
  description: 'Makes the write safe to repeat: 1 to 255 printable ASCII characters, new for each write (a UUID). A repeat with the same key, method, path and body within 24 hours answers the first answer again (status, body, ETag, Location) with Idempotent-Replayed: true and writes nothing; with another method, path or body it is 422 IDEMPOTENCY_KEY_REUSED; while the first still runs, 409 IDEMPOTENCY_KEY_IN_FLIGHT. Keys are the user\'s own. A repeat is answered again only past the route\'s access checks: the caller must still act, in the role the route needs, in the family the first request acted in (within its token\'s and its batch\'s family); otherwise it gets the refusal a new request gets. Answers that say to try again (401, 408, 429, 5xx, and any with Retry-After) are not kept, so a repeat runs afresh.'
})

const REPLAYED = { 'Idempotent-Replayed': { type: 'string', enum: ['true'], description: 'Present on the first answer of an Idempotency-Key given again' } }

/** A write route's schema with the key's header and answers. */
function keyedSchema (schema: Record<string, unknown>): Record<string, unknown> {
  const headers = (schema.headers ?? { type: 'object', properties: {} }) as { properties?: Record<string, TSchema> }
  const response: Record<string, TSchema> = { ...errorResponses(409, 422), ...(schema.response as Record<string, TSchema>) }
  for (const [status, answer] of Object.entries(response)) {
    if (status.startsWith('2')) response[status] = { ...answer, headers: { ...(answer.headers as object), ...REPLAYED } } as TSchema
  }
  return { ...schema, headers: { ...headers, properties: { ...headers.properties, 'idempotency-key': KEY_HEADER } }, response }
}

function deferred (): { promise: Promise<Ended>, resolve: (ended: Ended) => void } {
  let resolve: (ended: Ended) => void = () => {}
  const promise = new Promise<Ended>(r => { resolve = r })
  return { promise, resolve }
}

function bodyOf (payload: unknown): Buffer | null {
  if (payload === null || payload === undefined) return Buffer.alloc(0)
  if (typeof payload === 'string') return Buffer.from(payload)
  return Buffer.isBuffer(payload) ? payload : null
}

/**
 * Idempotency keys of writes (POST, PUT, PATCH, DELETE of a signed-in user):
 * the first answer of a key is kept in PostgreSQL, so that every instance
 * replays it. A key is claimed by a row that commits at once (its primary
 * key lets one request through), the request is handed a transaction
 * (`request.db`, plugins/handover.ts), and its answer is kept in that
 * transaction, with its write: a retry after a crash finds both or neither.
 */
export default fp(async function idempotency (fastify) {
  const { config, log } = fastify
  const staleAfter = Math.ceil(config.requestTimeout / 1000)
  const keys = keysOf([config.jwtSecret, ...(config.jwtSecretPrevious === null ? [] : [config.jwtSecretPrevious])])
  const { sealed, claimApart, claimHeld, heartbeat } = keyClaims(fastify.sql, keys, staleAfter)
  fastify.decorateRequest('idempotency', null)
  fastify.decorateRequest('heldReplay', null)

  /** The last preHandler of every keyed route: a repeat is answered only once every check of the route has passed. */
  const replayHeld: preHandlerAsyncHookHandler = async function (request, reply) {
    if (request.heldReplay === null) return
    replay(reply, request.heldReplay.answer)
    return reply
  }

  fastify.addHook('onRoute', (route: RouteOptions) => {
    const schema = route.schema as Record<string, unknown> | undefined
    const bearer = (schema?.security as Array<Record<string, unknown>> | undefined)?.some(item => 'bearer' in item) === true
    if (schema !== undefined && bearer && listOf(route.method).some(method => KEYED_METHODS.includes(method))) {
      route.config = { ...route.config, idempotency: route.config?.idempotency ?? 'held' }
      route.schema = keyedSchema(schema)
      route.preHandler = [...listOf(route.preHandler), replayHeld]
    }
    // Only routes that take a key keep answers: no other request pays for these hooks.
    if (route.config?.idempotency === undefined) return
    route.onSend = [...listOf(route.onSend), keepAnswerOnSend]
    route.onResponse = [...listOf(route.onResponse), endUnsent]
  })


  function replay (reply: FastifyReply, answer: StoredAnswer): void {
    reply.code(answer.status).header('idempotent-replayed', 'true')
    for (const name of REPLAYED_HEADERS) {
      const value = answer.headers[name]
      if (value !== undefined) reply.header(name, value)
    }
    const json = answer.headers['content-type']?.includes('json') === true
    void reply.send(answer.body.length === 0 ? undefined : json ? answer.body.toString() : answer.body)
  }

  /**
   * Runs the rest of the request in a savepoint of `held`, handed to it,
   * which rolls back when its answer is a refusal or is not kept; answers
   * the answer to keep.
   */
  async function work (request: FastifyRequest, held: Handed, run: Run, go: () => void): Promise<StoredAnswer> {
    try {
      return await inTransaction(held, async handed => {
        request.handed = handed
        go()
        const ended = await run.ended
        if (!ended.kept) throw new NotKept()
        if (ended.answer.status >= 400) throw new Refused(ended.answer)
        return ended.answer
      })
    } catch (error) {
      if (error instanceof Refused) return error.answer
      throw error
    }
  }

  /** A repeat's first answer, held until the route's checks pass; they run as the first request's did, and write nothing. */
  function hold (request: FastifyRequest, held: Held, done: (error?: Error) => void): void {
    request.heldReplay = held
    done()
  }

  async function start (request: FastifyRequest, handling: KeyHandling, key: string, done: (error?: Error) => void): Promise<void> {
    const fileDigest = request.upload?.sha256 ?? null
    // Under every key, so that a request of before a rotation of JWT_SECRET is still recognised.
    const prints = keys.map(pair => fingerprint(pair.print, request.method, request.url, request.body, fileDigest))
    const keyed: KeyedRequest = { userId: request.user.id, key, method: request.method, path: request.url, fingerprint: prints[0] }
    const { promise, resolve } = deferred()
    const run: Run = { keyed, claim: null, handling, end: resolve, ended: promise, finished: null, heartbeat: null, settled: false, familyId: null }
    // Inside another request's transaction (a batch's), the key is held by it and kept with it.
    const outer = request.handed
    if (outer !== null) {
      const found = await claimHeld(outer.sql, keyed, prints)
      if (found !== 'run') {
        if (found instanceof Error) done(found)
        else hold(request, found, done)
        return
      }
    } else {
      const claimed = await claimApart(keyed, prints)
      if (typeof claimed !== 'string') {
        if (claimed instanceof Error) done(claimed)
        else hold(request, claimed, done)
        return
      }
      run.claim = claimed
      run.heartbeat = heartbeat(keyed, claimed)
    }
    request.idempotency = run
    if (handling === 'apart') {
      done()
      return
    }
    let going = false
    const go = (): void => { going = true; done() }
    const claim = run.claim
    run.finished = outer !== null
      ? work(request, outer, run, go).then(async answer => {
        if (!(await keepLockedAnswer(outer.sql, keyed, KEY_LIFETIME_SECONDS, staleAfter, sealed(run, answer)))) throw new ClaimLost()
        return answer
      })
      : inTransaction(fastify.sql, async held => {
        const answer = await work(request, held, run, go)
        if (!(await keepAnswer(held.tx, keyed.userId, key, claim as string, sealed(run, answer)))) throw new ClaimLost()
        return answer
      })
    run.finished.catch(async (error: Error) => {
      if (going) return
      // The transaction did not even begin: the request answers its error, and the key is given up.
      await settle(run)
      done(error)
    })
  }

  fastify.addHook('preHandler', function (request, _reply, done) {
    const handling = request.routeOptions.config.idempotency
    const key = request.headers['idempotency-key']
    if (handling === undefined || typeof key !== 'string' || request.user?.id === undefined) {
      done()
      return
    }
    start(request, handling, key, done).catch(error => done(error as Error))
  })

  /** Ends a run's bookkeeping; a key claimed on its own and not kept is given up. */
  async function settle (run: Run, kept = false): Promise<void> {
    run.settled = true
    if (run.heartbeat !== null) clearInterval(run.heartbeat)
    if (run.claim !== null && !kept) await releaseKey(fastify.sql, run.keyed.userId, run.keyed.key, run.claim).catch(() => {})
  }

  /** An answer that could not be kept with its write, which did not happen: the error's answer instead. */
  function failed (request: FastifyRequest, reply: FastifyReply, error: Error): string {
    const cause = error instanceof ClaimLost ? new errors.idempotencyKeyInFlight() : error
    const answer = answerFor(cause as Parameters<typeof answerFor>[0], request, config.production)
    if (answer.status >= 500) log.warn({ err: error, reqId: request.id }, 'a write with an Idempotency-Key could not be committed')
    reply.code(answer.status)
    reply.removeHeader('etag')
    reply.removeHeader('location')
    reply.header('content-type', 'application/json; charset=utf-8')
    if (answer.status === 503) reply.header('retry-after', '5')
    return JSON.stringify(answer.body)
  }

  /** Keeps the answer of a keyed write, with its write or just after it. */
  async function keepAnswerOnSend (request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
    const run = request.idempotency
    if (run === null || run.settled) return payload
    const body = bodyOf(payload)
    const headers: StoredAnswer['headers'] = {}
    for (const name of REPLAYED_HEADERS) {
      const value = reply.getHeader(name)
      if (value !== undefined) headers[name] = String(value)
    }
    const answer: StoredAnswer = { status: reply.statusCode, headers, body: body ?? Buffer.alloc(0) }
    run.familyId = scopeOf(request)?.familyId ?? null
    const kept = body !== null && keepsAnswer(reply.statusCode, reply.hasHeader('retry-after'))
    if (run.handling === 'apart') {
      // Kept just after the route's own commit: a crash between the two leaves the key to be taken over.
      const stored = kept && await keepAnswer(fastify.sql, run.keyed.userId, run.keyed.key, run.claim as string, sealed(run, answer))
        .catch(error => { log.warn({ err: error, reqId: request.id }, 'the answer of an Idempotency-Key could not be kept'); return false })
      await settle(run, stored)
      return payload
    }
    run.end({ kept, answer })
    try {
      await run.finished
      await settle(run, true)
      return payload
    } catch (error) {
      await settle(run)
      return error instanceof NotKept ? payload : failed(request, reply, error as Error)
    }
  }

  /** A request that ended without sending (its reply hijacked) keeps nothing. */
  async function endUnsent (request: FastifyRequest): Promise<void> {
    const run = request.idempotency
    if (run === null || run.settled) return
    run.end({ kept: false, answer: { status: 500, headers: {}, body: Buffer.alloc(0) } })
    await run.finished?.catch(() => {})
    await settle(run)
  }

  // Expired keys are swept: each instance deletes some every few minutes.
  const sweep = setInterval(() => {
    sweepKeys(fastify.sql, 1000).catch(error => log.debug({ err: error }, 'expired idempotency keys could not be swept'))
  }, 5 * 60 * 1000)
  sweep.unref()
  fastify.addHook('onClose', async () => { clearInterval(sweep) })
}, { name: 'idempotency', dependencies: ['config', 'db', 'handover', 'errors'] })
