import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import { afterCommit, ambientFamily, type Effect } from '../db/ambient'
import type { Sql } from '../db/client'

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The request's way to the database: the pool, or the transaction an
     * Idempotency-Key or a batch holds the request in, whose `begin` makes a
     * savepoint there. Every hook and handler that reads or writes a
     * family's data goes through it.
     */
    db: Sql
    /** The only family the request may touch (a batch's), or null. */
    onlyFamily: number | null
    /**
     * Runs `effect` once the request's work has committed: at once outside a
     * transaction, after the commit of the one it is held in otherwise, and
     * never when that rolls back.
     */
    afterCommit: (effect: Effect) => Promise<void>
  }
}

/** The request's database, its only family and its work after commit. */
export default fp(async function handover (fastify) {
  fastify.decorateRequest('db', {
    getter (this: FastifyRequest): Sql { return fastify.sql }
  })
  fastify.decorateRequest('onlyFamily', {
    getter (this: FastifyRequest): number | null { return ambientFamily() }
  })
  fastify.decorateRequest('afterCommit', async function (this: FastifyRequest, effect: Effect): Promise<void> {
    await afterCommit(effect)
  })
}, { name: 'handover', dependencies: ['db'] })
