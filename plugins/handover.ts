import fp from 'fastify-plugin'
import type { FastifyRequest, InjectOptions, LightMyRequestResponse } from 'fastify'
import { randomBytes } from 'node:crypto'
import { Socket } from 'node:net'
import type { Sql } from '../db/client'
import type { Effect, Handed } from '../db/handover'
import { invalidRequest } from '../lib/errors'

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The transaction the request is held in, or null: an Idempotency-Key's
     * (plugins/idempotency.ts), or, for a request a batch sends, the batch's.
     */
    handed: Handed | null
    /**
     * The request's way to the database: the pool, or the transaction it is
     * held in, whose `begin` makes a savepoint there. Every hook and handler
     * that reads or writes a family's data goes through it.
     */
    db: Sql
    /**
     * The request's way to the database for a short read that takes no lock
     * (its session and target): the lookup pool (plugins/db.ts), or the
     * transaction it is held in, where the read sees the transaction's writes.
     */
    reads: Sql
    /** The only family the request may touch (a batch's), or null. */
    onlyFamily: number | null
    /**
     * Runs `effect` once the request's work has committed: at once outside a
     * transaction, after the outermost commit of the one it is held in
     * otherwise, and never when that rolls back.
     */
    afterCommit: (effect: Effect) => Promise<void>
  }
  interface FastifyInstance {
    /** Sends a request through the app held in `handed`: a batch's operation. */
    injectHanded: (handed: Handed, options: InjectOptions) => Promise<LightMyRequestResponse>
  }
}

/**
 * The header that names the transaction an injected request is held in: a
 * random token, good only while its request runs and only in this process.
 */
const HANDED_HEADER = 'x-handed-transaction'

/**
 * The request's database, its only family and its work after commit, all
 * from the transaction it is handed, if any. A batch hands its transaction
 * to the requests it sends through the app by a token in a header, looked
 * up here; the header is refused from a real connection, and a token not
 * held (forged, or of a request that has ended) is refused as well.
 */
export default fp(async function handover (fastify) {
  const held = new Map<string, Handed>()
  fastify.decorateRequest('handed', null)
  fastify.decorateRequest('db', {
    getter (this: FastifyRequest): Sql { return this.handed?.sql ?? fastify.sql }
  })
  fastify.decorateRequest('reads', {
    getter (this: FastifyRequest): Sql { return this.handed?.sql ?? fastify.lookups }
  })
  fastify.decorateRequest('onlyFamily', {
    getter (this: FastifyRequest): number | null { return this.handed?.familyId ?? null }
  })
  fastify.decorateRequest('afterCommit', async function (this: FastifyRequest, effect: Effect): Promise<void> {
    if (this.handed === null) await effect()
    else await this.handed.afterCommit(effect)
  })

  fastify.decorate('injectHanded', async function (handed: Handed, options: InjectOptions): Promise<LightMyRequestResponse> {
    const token = randomBytes(24).toString('base64url')
    held.set(token, handed)
    try {
      return await fastify.inject({ ...options, headers: { ...options.headers, [HANDED_HEADER]: token } })
    } finally {
      held.delete(token)
    }
  })

  // First of the request's hooks, before authentication reads the database.
  // A callback, not an async function: most requests carry no token, and pay for no promise.
  fastify.addHook('onRequest', (request, _reply, done) => {
    const token = request.headers[HANDED_HEADER]
    if (token === undefined) {
      done()
      return
    }
    const handed = typeof token === 'string' && !(request.raw.socket instanceof Socket) ? held.get(token) : undefined
    if (handed === undefined) {
      done(invalidRequest([{ path: `/headers/${HANDED_HEADER}`, message: 'is set only by the service itself' }]))
      return
    }
    request.handed = handed
    done()
  })
}, { name: 'handover', dependencies: ['db'] })
