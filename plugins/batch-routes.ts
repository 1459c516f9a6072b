import fp from 'fastify-plugin'
import type { RouteOptions } from 'fastify'
import { routeScope, type ScopeOptions } from './scope'
import { listOf } from '../lib/lists'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** false: the route never runs inside a batch, though it is a JSON write of a family's data. */
    batch?: boolean
  }
  interface FastifyInstance {
    /** The routes an operation of a batch may name. */
    batchRoutes: BatchRoutes
  }
}

/** A route a batch may run. */
export interface BatchRoute {
  method: string
  url: string
  scope: ScopeOptions
}

export interface Matched {
  route: BatchRoute
  params: Record<string, string>
}

interface Compiled extends BatchRoute {
  pattern: RegExp
  names: string[]
  /** Segments without a parameter: the router prefers the route with more of them. */
  fixed: number
}

const WRITES = ['POST', 'PUT', 'PATCH', 'DELETE']
/** The caller's own account, administration and sign-in are never a family's data. */
const NEVER = /^\/api\/(me|admin|auth)(\/|$)/

/**
 * The writes a batch may run: JSON writes of a family's data, decided by the
 * family scope (plugins/access.ts). Uploads, imports and other bodies that
 * are not JSON, reads, exports, streams, the caller's account, administration
 * and routes marked `batch: false` are not among them.
 */
export class BatchRoutes {
  private readonly routes: Compiled[] = []

  add (route: RouteOptions): void {
    const scope = routeScope(route)
    const consumes = (route.schema as { consumes?: string[] } | undefined)?.consumes
    if (scope === undefined || route.config?.batch === false || NEVER.test(route.url)) return
    if (consumes !== undefined && !consumes.every(type => type === 'application/json')) return
    const names: string[] = []
    const source = route.url.split('/').map(segment => {
      if (!segment.startsWith(':')) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
      names.push(segment.slice(1))
      return '([^/]+)'
    }).join('/')
    const fixed = route.url.split('/').filter(segment => !segment.startsWith(':')).length
    for (const method of listOf(route.method)) {
      if (!WRITES.includes(method)) continue
      this.routes.push({ method, url: route.url, scope, pattern: new RegExp(`^${source}$`), names, fixed })
    }
    this.routes.sort((a, b) => b.fixed - a.fixed)
  }

  /** The route a write of this path reaches, when a batch may run it. */
  find (method: string, path: string): Matched | undefined {
    for (const route of this.routes) {
      if (route.method !== method) continue
      const found = route.pattern.exec(path)
      if (found === null) continue
      return { route, params: Object.fromEntries(route.names.map((name, i) => [name, found[i + 1]])) }
    }
    return undefined
  }
}

/** Collects the routes a batch may run, as they are registered. */
export default fp(async function batchRoutes (fastify) {
  const table = new BatchRoutes()
  fastify.decorate('batchRoutes', table)
  fastify.addHook('onRoute', route => table.add(route))
}, { name: 'batch-routes', dependencies: ['access'] })
