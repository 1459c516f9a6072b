import fp from 'fastify-plugin'
import helmet, { type HelmetOptions } from 'helmet'
import type { IncomingMessage, ServerResponse } from 'node:http'
import cors, { type FastifyCorsOptions } from '@fastify/cors'
import rateLimit from '@fastify/rate-limit'
import createError from '@fastify/error'
import type { FastifyRequest } from 'fastify'
import type Redis from 'ioredis'
import { errors, withRetryAfter } from '../lib/errors'
import { memoryStore, redisOrMemoryStore } from './rate-limit-store'

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * A hook that counts a request in a bucket of AUTH_RATE_LIMIT_MAX requests
     * per AUTH_RATE_LIMIT_WINDOW for each key `keyOf` names (an account, an
     * address), or refuses it with 429 RATE_LIMITED and Retry-After. A request
     * without a key (null) is not counted.
     */
    authLimit: (bucket: string, keyOf: (request: FastifyRequest) => string | null) => (request: FastifyRequest) => Promise<void>
  }

  interface FastifyContextConfig {
    /** A route's own CORS, in place of CORS_ORIGIN's (such as ANY_ORIGIN). */
    cors?: FastifyCorsOptions
  }
}

/**
 * The CORS of answers that a page of any origin may read, whatever
 * CORS_ORIGIN says: a share link's manifest and files, which a doctor's
 * viewer fetches with nothing but the link. No credentials are involved.
 * Every OPTIONS request is answered as a preflight.
 */
export const ANY_ORIGIN: FastifyCorsOptions = {
  origin: '*',
  credentials: false,
  methods: ['GET', 'POST'],
  allowedHeaders: ['Content-Type'],
  maxAge: 86400,
  strictPreflight: false
}

const RateLimited = createError('RATE_LIMITED', 'Too many requests; retry in %s', 429)

/** The headers helmet sets, once, from a response that records them. */
function helmetHeaders (options: HelmetOptions): Record<string, string> {
  const headers: Record<string, string> = {}
  const recorder = {
    setHeader (name: string, value: string | number | readonly string[]) { headers[name.toLowerCase()] = String(value) },
    removeHeader (name: string) { delete headers[name.toLowerCase()] },
    getHeader (name: string) { return headers[name.toLowerCase()] }
  }
  let failure: unknown = null
  helmet(options)({} as IncomingMessage, recorder as unknown as ServerResponse, error => { failure = error ?? null })
  if (failure !== null) throw failure
  return headers
}

/**
 * Helmet's headers, the same for every answer: worked out once, not on each
 * request (as @fastify/helmet does, which cost a third of the throughput of
 * the lightest reads). Answers written outside the router carry them too.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = helmetHeaders({
  // The service speaks plain HTTP behind its TLS proxy; the docs page must load over either.
  contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } }
})

/** How often an unreachable Redis is logged. */
const REDIS_WARNING_EVERY_MS = 60_000

/**
 * The Redis of the rate limiter. While it cannot be reached, no command waits
 * in a queue and none waits more than half a second; it reconnects by itself.
 * Its client library is loaded only here: without REDIS_URL it never is.
 */
function rateLimitRedis (url: string, unreachable: (error: Error) => void): Redis {
  const RedisClient = require('ioredis') as typeof Redis
  const redis = new RedisClient(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    commandTimeout: 500,
    retryStrategy: attempts => Math.min(attempts * 250, 2000)
  })
  redis.on('error', unreachable)
  return redis
}

/** A warning at most once a minute, however often Redis fails. */
function throttledWarning (warn: (error: Error) => void): (error: Error) => void {
  let warnedAt = -Infinity
  return error => {
    if (Date.now() - warnedAt < REDIS_WARNING_EVERY_MS) return
    warnedAt = Date.now()
    warn(error)
  }
}

/**
 * Security headers on every response, CORS only for the configured origins, and
 * the rate limiter that routes opt into (`config.rateLimit`). With REDIS_URL
 * the limiter's counters are kept in Redis and shared by every instance, and
 * in this instance's memory while Redis cannot be reached; without it, in
 * memory.
 */
export default fp(async function security (fastify) {
  const { config } = fastify

  fastify.addHook('onRequest', (_request, reply, done) => {
    reply.headers(SECURITY_HEADERS)
    done()
  })

  await fastify.register(cors, {
    origin: config.corsOrigins.length > 0 ? config.corsOrigins : false,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type', 'X-Request-Id', 'If-Match', 'If-None-Match', 'Last-Event-ID', 'Idempotency-Key'],
    exposedHeaders: ['X-Request-Id', 'Location', 'Retry-After', 'ETag', 'Idempotent-Replayed'],
    maxAge: 600
  })

  const unreachable = throttledWarning(error => fastify.log.warn({ err: error }, 'Redis is unreachable: rate limits are counted in this instance\'s memory until it answers again'))
  const redis = config.redisUrl === null ? null : rateLimitRedis(config.redisUrl, unreachable)
  if (redis !== null) fastify.addHook('onClose', async () => { redis.disconnect() })

  await fastify.register(rateLimit, {
    global: false,
    max: config.authRateLimitMax,
    timeWindow: config.authRateLimitWindow * 1000,
    errorResponseBuilder: (_request, context) => new RateLimited(context.after),
    store: redis === null ? memoryStore() : redisOrMemoryStore(redis, 'child-health-rate-limit-', unreachable)
  })

  // Counted in the same store as the routes' own limits, under keys that name their bucket.
  fastify.decorate('authLimit', function authLimit (bucket: string, keyOf: (request: FastifyRequest) => string | null) {
    const count = fastify.createRateLimit({ keyGenerator: request => `${bucket}:${keyOf(request) ?? ''}` })
    return async function limit (request: FastifyRequest): Promise<void> {
      if (keyOf(request) === null) return
      const counted = await count(request)
      if (counted.isAllowed || !counted.isExceeded) return
      const seconds = Math.max(1, counted.ttlInSeconds)
      throw withRetryAfter(new errors.rateLimited(`Too many requests; retry in ${seconds} seconds`), seconds)
    }
  })
}, { name: 'security', dependencies: ['config'] })
