import type autocannon from 'autocannon'
import { emailOf, inBatches, login } from './accounts'
import type { Load } from './load'
import type { SeededChild } from './seed'
import { settings } from './settings'

type Request = autocannon.Request

export interface World {
  serviceUrl: string
  children: SeededChild[]
  /** An access token of each family's owner, by user id. */
  tokens: Map<number, string>
}

const JSON_TYPE = { 'content-type': 'application/json' }

function bearer (world: World, child: SeededChild): Record<string, string> {
  return { authorization: `Bearer ${world.tokens.get(child.userId) as string}` }
}

/** Every child in turn, each connection starting elsewhere, so the load spreads over all families. */
function everyChild (world: World, connection: number, build: (child: SeededChild) => Request): Request[] {
  const { children } = world
  const start = (connection * 7) % children.length
  return children.map((_, index) => build(children[(start + index) % children.length]))
}

export function measurementsPath (childId: number): string {
  return `/api/children/${childId}/measurements?limit=${settings.listLimit}`
}

/** The measurements list; the read floors answer the same requests. */
export function listMeasurements (world: World, url = world.serviceUrl, connections = settings.connections): Load {
  return {
    url,
    connections,
    requests: connection => everyChild(world, connection, child => ({
      method: 'GET', path: measurementsPath(child.id), headers: bearer(world, child)
    }))
  }
}

export function readChild (world: World): Load {
  return {
    url: world.serviceUrl,
    connections: settings.connections,
    requests: connection => everyChild(world, connection, child => ({
      method: 'GET', path: `/api/children/${child.id}`, headers: bearer(world, child)
    }))
  }
}

export function listVisits (world: World): Load {
  return {
    url: world.serviceUrl,
    connections: settings.connections,
    requests: connection => everyChild(world, connection, child => ({
      method: 'GET', path: `/api/children/${child.id}/visits?type=wellness&sort=-date`, headers: bearer(world, child)
    }))
  }
}

let fresh = 0

/** GETs of every child's `path`, each with a URL of its own (an ignored query parameter), so that no answer can come from the cache. */
function misses (world: World, path: (childId: number) => string): Load {
  return {
    url: world.serviceUrl,
    connections: settings.connections,
    requests: connection => everyChild(world, connection, child => ({
      method: 'GET',
      headers: bearer(world, child),
      setupRequest: request => ({ ...request, path: `${path(child.id)}&fresh=${fresh++}` })
    }))
  }
}

/**
 * The measurements list, every request with a URL of its own (an ignored
 * query parameter): its answer cannot be in the cache, as right after a write
 * of the child, and is read from the database each time.
 */
export function listMisses (world: World): Load {
  return misses(world, measurementsPath)
}

/**
 * The measurements list sent with the ETag of its last answer: a 304 without
 * a body. The ETags are read before each run.
 */
export function listNotModified (world: World): Load {
  const etags = new Map<number, string>()
  return {
    url: world.serviceUrl,
    connections: settings.connections,
    prepare: async () => {
      for (const child of world.children) {
        const res = await fetch(world.serviceUrl + measurementsPath(child.id), { headers: bearer(world, child) })
        await res.arrayBuffer()
        etags.set(child.id, res.headers.get('etag') as string)
      }
    },
    requests: connection => everyChild(world, connection, child => ({
      method: 'GET',
      path: measurementsPath(child.id),
      headers: bearer(world, child),
      setupRequest: request => ({ ...request, headers: { ...request.headers, 'if-none-match': etags.get(child.id) as string } })
    }))
  }
}

/** The growth of every child on a chart (the child's, WHO's), every request with a URL of its own: scored afresh each time. */
export function growthMisses (world: World, reference = 'who'): Load {
  return misses(world, childId => `/api/children/${childId}/growth?reference=${reference}`)
}

/** The growth of every child on a chart (the child's, WHO's, by default). */
export function growth (world: World, reference = 'who'): Load {
  return {
    url: world.serviceUrl,
    connections: settings.connections,
    requests: connection => everyChild(world, connection, child => ({
      method: 'GET', path: `/api/children/${child.id}/growth?reference=${reference}`, headers: bearer(world, child)
    }))
  }
}

/** Today, in UTC: within every child's life and not in the future for the service. */
function today (): string {
  return new Date().toISOString().slice(0, 10)
}

/** A new measurement; the write floor answers the same requests. */
export function createMeasurement (world: World, url = world.serviceUrl): Load {
  const body = JSON.stringify({ measuredAt: today(), heightCm: 121.4, weightKg: 23.35, notes: 'Measured at home' })
  return {
    url,
    connections: settings.connections,
    requests: connection => everyChild(world, connection, child => ({
      method: 'POST', path: `/api/children/${child.id}/measurements`, headers: { ...bearer(world, child), ...JSON_TYPE }, body
    }))
  }
}

/** Logging in, each connection as another parent. */
export function logIn (world: World, connections = settings.connections): Load {
  return {
    url: world.serviceUrl,
    connections,
    requests: connection => [{
      method: 'POST',
      path: '/api/auth/login',
      headers: JSON_TYPE,
      body: JSON.stringify({ email: emailOf(connection % settings.families), password: settings.password })
    }]
  }
}

/**
 * Refreshing tokens: each connection has a session of its own, opened by a
 * login before the run, and sends the refresh token of the pair it got last.
 * A refresh cut off at the end of a run may have rotated its token unseen, so
 * every run starts from new sessions.
 */
export function refreshTokens (world: World): Load {
  let sessions: string[] = []
  return {
    url: world.serviceUrl,
    connections: settings.connections,
    prepare: async () => {
      const pairs = await inBatches(settings.connections, 4, connection => login(world.serviceUrl, emailOf(connection % settings.families)))
      sessions = pairs.map(pair => pair.refreshToken)
    },
    requests: connection => [{
      method: 'POST',
      path: '/api/auth/refresh',
      headers: JSON_TYPE,
      setupRequest: request => ({ ...request, body: JSON.stringify({ refreshToken: sessions[connection] }) }),
      onResponse: (status, body) => {
        if (status === 200) sessions[connection] = (JSON.parse(body) as { refreshToken: string }).refreshToken
      }
    }]
  }
}

/** The administrators' statistics. */
export function adminStats (world: World, adminToken: string): Load {
  return {
    url: world.serviceUrl,
    connections: settings.connections,
    requests: () => [{ method: 'GET', path: '/api/admin/stats', headers: { authorization: `Bearer ${adminToken}` } }]
  }
}

/**
 * One child's measurements list, at an offset: every request the same URL,
 * or with `misses` each a URL of its own, read from the database each time.
 */
export function oneChildList (world: World, child: SeededChild, offset = 0, misses = false): Load {
  const path = `${measurementsPath(child.id)}&offset=${offset}`
  return {
    url: world.serviceUrl,
    connections: settings.connections,
    requests: () => [{
      method: 'GET',
      headers: bearer(world, child),
      ...(misses ? { setupRequest: (request: Request) => ({ ...request, path: `${path}&fresh=${fresh++}` }) } : { path })
    }]
  }
}

/** Milliseconds per returned point of a child's growth, scored afresh, from the best of `runs` sequential requests. */
export async function growthPerPoint (world: World, child: SeededChild, runs = 5): Promise<{ points: number, ms: number, msPerPoint: number }> {
  let best = Infinity
  let points = 0
  for (let run = 0; run < runs; run++) {
    const start = process.hrtime.bigint()
    const res = await fetch(`${world.serviceUrl}/api/children/${child.id}/growth?fresh=${fresh++}`, { headers: bearer(world, child) })
    const body = await res.json() as { points?: unknown[] }
    const ms = Number(process.hrtime.bigint() - start) / 1e6
    if (res.status !== 200) throw new Error(`the growth route answered ${res.status}`)
    points = body.points?.length ?? 0
    best = Math.min(best, ms)
  }
  return { points, ms: Number(best.toFixed(1)), msPerPoint: points === 0 ? 0 : Number((best / points).toFixed(4)) }
}
