import fp from 'fastify-plugin'
import { ByteLru } from '../lib/byte-lru'

interface Cached {
  etag: string
  body: Buffer
  bytes: number
}

export interface CacheStats {
  maxBytes: number
  bytes: number
  entries: number
  hits: number
  misses: number
}

/**
 * The last answer of each URL, with its ETag. An ETag names what the answer
 * shows at one version of its data, and the current one is read from the
 * database on every request before the cache is asked, so a kept answer is
 * never stale, on any instance, and access is decided before it is served.
 */
export interface ResponseCache {
  /** The kept answer of a URL, whatever its ETag, for a read that can tell the database which one it holds. */
  latest: (url: string) => { etag: string, body: Buffer } | undefined
  /** Counts a read that asked with `latest`: served from the cache, or not. */
  count: (hit: boolean) => void
  /** The kept answer of a URL when it has this ETag. */
  get: (url: string, etag: string) => Buffer | undefined
  set: (url: string, etag: string, body: string | Buffer) => void
  stats: () => CacheStats
}

declare module 'fastify' {
  interface FastifyInstance {
    responses: ResponseCache
  }
  interface FastifyRequest {
    /** Where this request's answer is kept once sent, for a read that missed the cache: its URL and ETag. */
    cacheKey: { url: string, etag: string } | null
  }
}

/** The in-process cache of answers, bounded by RESPONSE_CACHE_MB, least recently used out. */
export default fp(async function responseCache (fastify) {
  const lru = new ByteLru<Cached>(fastify.config.responseCacheBytes)
  let hits = 0
  let misses = 0
  const cache: ResponseCache = {
    latest (url) {
      const found = lru.get(url)
      return found === undefined ? undefined : { etag: found.etag, body: found.body }
    },
    count (hit) {
      if (hit) hits += 1
      else misses += 1
    },
    get (url, etag) {
      const found = lru.get(url)
      if (found === undefined || found.etag !== etag) {
        misses += 1
        return undefined
      }
      hits += 1
      return found.body
    },
    set (url, etag, body) {
      if (lru.maxBytes === 0) return
      const bytes = typeof body === 'string' ? Buffer.from(body) : body
      // The URL's earlier answer is replaced: it will not be asked for again.
      lru.set(url, { etag, body: bytes, bytes: bytes.length + url.length })
    },
    stats: () => ({ maxBytes: lru.maxBytes, bytes: lru.bytes, entries: lru.size, hits, misses })
  }
  fastify.decorate('responses', cache)
  fastify.decorateRequest('cacheKey', null)
  fastify.addHook('onSend', (request, reply, payload, done) => {
    const key = request.cacheKey
    if (key !== null && reply.statusCode === 200 && (typeof payload === 'string' || Buffer.isBuffer(payload))) {
      // An answer read inside a transaction is kept only once that has committed: its ETag names data that could roll back.
      void request.afterCommit(() => cache.set(key.url, key.etag, payload))
    }
    done(null, payload)
  })
}, { name: 'response-cache', dependencies: ['config', 'handover'] })
