import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { utcToday } from '../lib/days'
import { clockOfTag, clockTag, noneMatch, urlHash, versionTag } from '../lib/etag'

const JSON_TYPE = 'application/json; charset=utf-8'

/** How a read is tagged: by its target's version, or by its URL and the clock of what it shows. */
export interface Tagging {
  etag?: 'version' | 'child' | 'family' | null
  /** The answer also depends on the day: the day is part of its clock. */
  daily?: boolean
}

/** The answers of a one-statement read that may still serve: the client's and this instance's, as clocks of its URL. */
export interface Held {
  hash: string
  clientClock: string | null
  kept: { etag: string, body: Buffer } | undefined
  keptClock: string | null
  /** Whether any answer is held: the statement then reads only the clock, not the answer. */
  any: boolean
}

export interface ConditionalReads {
  /** A read's ETag from its target's version, or from its URL and the clock of what it shows; null when it has none. */
  tagOf: (request: FastifyRequest, tagging: Tagging, found: { version: number | null, clock: string | null }) => string | null
  /**
   * Sets a read's ETag once its access is decided, and answers a 304 when
   * If-None-Match names it, or the kept answer when `cache` and one is kept;
   * otherwise the answer is kept once sent, and nothing is answered here.
   */
  serve: (request: FastifyRequest, reply: FastifyReply, etag: string, cache: boolean) => FastifyReply | undefined
  /** The answers held for a one-statement read, before its statement runs. */
  held: (request: FastifyRequest, cache: boolean) => Held
  /**
   * Ends a one-statement read whose clock is now known: sets its ETag, and
   * answers a 304 or the kept answer; otherwise gives the answer for the
   * handler to send, kept once sent (`answer` reads it when the statement did
   * not write it, because an answer was held that no longer serves).
   */
  finish: (request: FastifyRequest, reply: FastifyReply, held: Held, clock: string, cache: boolean, answer: () => Promise<string | Buffer>) => Promise<FastifyReply | string | Buffer>
}

declare module 'fastify' {
  interface FastifyInstance {
    conditional: ConditionalReads
  }
}

/** Answers a conditional read whose ETag is current: 304, no body. */
export function notModified (reply: FastifyReply): FastifyReply {
  return reply.code(304).send()
}

function headerOf (request: FastifyRequest, name: 'if-none-match'): string | undefined {
  const header = request.headers[name]
  return Array.isArray(header) ? header.join(',') : header
}

/**
 * ETags, 304s and kept answers of reads, once the family scope has let the
 * caller through: an ETag names what the answer shows, read from the
 * database on every request, so a kept answer is never stale and never
 * served before access is decided.
 */
export default fp(async function conditionalReads (fastify) {
  const { responses } = fastify
  const reads: ConditionalReads = {
    tagOf (request, tagging, found) {
      if (tagging.etag === 'version') return found.version === null ? null : versionTag(found.version)
      if (tagging.etag !== undefined && found.clock !== null) return clockTag(request.url, tagging.daily === true ? `${found.clock}.${utcToday()}` : found.clock)
      return null
    },
    serve (request, reply, etag, cache) {
      reply.header('etag', etag)
      if (noneMatch(headerOf(request, 'if-none-match'), etag)) return notModified(reply)
      if (!cache) return
      const kept = responses.get(request.url, etag)
      if (kept !== undefined) return reply.type(JSON_TYPE).send(kept)
      request.cacheKey = { url: request.url, etag }
    },
    held (request, cache) {
      const hash = urlHash(request.url)
      const clientClock = clockOfTag(headerOf(request, 'if-none-match'), request.url, hash)
      const kept = cache ? responses.latest(request.url) : undefined
      const keptClock = kept === undefined ? null : clockOfTag(kept.etag, request.url, hash)
      return { hash, clientClock, kept, keptClock, any: clientClock !== null || keptClock !== null }
    },
    async finish (request, reply, held, clock, cache, answer) {
      const etag = clockTag(request.url, clock, held.hash)
      reply.header('etag', etag)
      if (held.clientClock === clock) return notModified(reply)
      if (held.kept !== undefined && held.keptClock === clock) {
        responses.count(true)
        return reply.type(JSON_TYPE).send(held.kept.body)
      }
      if (cache) {
        responses.count(false)
        request.cacheKey = { url: request.url, etag }
      }
      return await answer()
    }
  }
  fastify.decorate('conditional', reads)
}, { name: 'conditional-reads', dependencies: ['response-cache'] })
