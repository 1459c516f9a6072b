import type { FastifyRateLimitStoreCtor } from '@fastify/rate-limit'
import type Redis from 'ioredis'

/** A count of @fastify/rate-limit's stores: requests in the window so far, and milliseconds until it ends. */
interface Count {
  current: number
  ttl: number
}

type Counted = (error: Error | null, count?: Count) => void

/** @fastify/rate-limit's store interface, as its own stores implement it. */
interface Store {
  incr: (key: string, done: Counted, timeWindow: number, max: number) => void
  child: (options: LimitOptions) => Store
}

/** What the rate limiter passes a store: its options, and for a route's own limit the route. */
interface LimitOptions {
  continueExceeding?: boolean
  exponentialBackoff?: boolean
  routeInfo?: { method?: string | string[], url?: string }
}

type StoreClass = new (...args: any[]) => Store

// The rate limiter's own stores, which its package does not type: the Redis
// one counts with one Lua script per request, the local one in an LRU map.
const LocalStore = require('@fastify/rate-limit/store/LocalStore') as StoreClass
const RedisStore = require('@fastify/rate-limit/store/RedisStore') as StoreClass

/** A route's own limit counts under its method and URL, as the Redis store names it; the other limits' keys name their bucket. */
function routePrefix (options: LimitOptions): string {
  const { method, url } = options.routeInfo ?? {}
  return method === undefined || url === undefined ? '' : `${String(method)}${url}-`
}

/**
 * The rate limiter's local store, answering each request its own count. The
 * local store answers the object it keeps, which the limiter reads only once
 * its promise settles: requests that came together read the count of the
 * last of them, and all were refused once it passed the maximum, though the
 * first ones were within it.
 */
class MemoryStore implements Store {
  private readonly local: Store

  constructor (private readonly options: LimitOptions) {
    this.local = new LocalStore(options.continueExceeding, options.exponentialBackoff)
  }

  incr (key: string, done: Counted, timeWindow: number, max: number): void {
    this.local.incr(key, (error, count) => {
      done(error, count === undefined ? undefined : { current: count.current, ttl: count.ttl })
    }, timeWindow, max)
  }

  child (options: LimitOptions): Store {
    return new MemoryStore({ ...this.options, ...options })
  }
}

// The package's types lag behind it: it passes incr the window and the maximum too.
const asStoreClass = (store: StoreClass): FastifyRateLimitStoreCtor => store as unknown as FastifyRateLimitStoreCtor

/** A store for @fastify/rate-limit that counts in this instance's memory. */
export function memoryStore (): FastifyRateLimitStoreCtor {
  return asStoreClass(MemoryStore)
}

/**
 * A store for @fastify/rate-limit that counts in Redis, shared by every
 * instance, and in this instance's memory while Redis does not answer: a
 * request is never let through uncounted, nor refused, for Redis. Redis is not
 * asked while it is not connected (its client reconnects by itself), so an
 * outage costs a request nothing; a command that fails is counted in memory.
 * The memory's counts are those of the outage only: once Redis answers again,
 * its own counts rule.
 */
export function redisOrMemoryStore (redis: Redis, nameSpace: string, unreachable: (error: Error) => void): FastifyRateLimitStoreCtor {
  class RedisOrMemoryStore implements Store {
    private readonly shared: Store
    private readonly memory: Store

    constructor (private readonly options: LimitOptions) {
      this.shared = new RedisStore(options.continueExceeding, options.exponentialBackoff, redis, nameSpace + routePrefix(options))
      this.memory = new MemoryStore(options)
    }

    incr (key: string, done: Counted, timeWindow: number, max: number): void {
      if (redis.status !== 'ready') {
        this.memory.incr(key, done, timeWindow, max)
        return
      }
      this.shared.incr(key, (error, count) => {
        if (error === null) {
          done(null, count)
          return
        }
        unreachable(error)
        this.memory.incr(key, done, timeWindow, max)
      }, timeWindow, max)
    }

    child (options: LimitOptions): Store {
      return new RedisOrMemoryStore({ ...this.options, ...options })
    }
  }
  return asStoreClass(RedisOrMemoryStore)
}
