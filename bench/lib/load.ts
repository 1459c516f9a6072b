import autocannon from 'autocannon'
import { settings } from './settings'

/** One load: where it goes, how many connections, and the requests each connection sends in turn. */
export interface Load {
  url: string
  connections: number
  requests: (connection: number) => autocannon.Request[]
  /** Runs before the warm-up and again before the measured run (fresh sessions, for instance). */
  prepare?: () => Promise<void>
}

export interface Figures {
  requestsPerSecond: number
  p50Ms: number
  p99Ms: number
  requests: number
  non2xx: number
  errors: number
  timeouts: number
  statusCodes: Record<string, number>
  seconds: number
}

export interface Firing {
  stop: () => void
  done: Promise<Figures>
}

type Instance = autocannon.Instance & PromiseLike<autocannon.Result>

function percentile (sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]
}

const round = (value: number, places: number): number => Number(value.toFixed(places))

/**
 * Latencies are taken from every response with autocannon's sub-millisecond
 * timing, rather than from its histogram, which rounds to whole milliseconds.
 */
function figures (result: autocannon.Result, latencies: number[]): Figures {
  const sorted = Float64Array.from(latencies).sort()
  const statusCodes: Record<string, number> = {}
  for (const [code, stat] of Object.entries(result.statusCodeStats ?? {})) statusCodes[code] = stat.count ?? 0
  return {
    requestsPerSecond: round(latencies.length / result.duration, 1),
    p50Ms: round(percentile(sorted, 0.5), 2),
    p99Ms: round(percentile(sorted, 0.99), 2),
    requests: latencies.length,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes,
    seconds: result.duration
  }
}

export function fire (load: Load, seconds: number): Firing {
  let next = 0
  const latencies: number[] = []
  const instance = autocannon({
    url: load.url,
    connections: load.connections,
    duration: seconds,
    timeout: 30,
    setupClient: client => client.setRequests(load.requests(next++))
  }) as unknown as Instance
  instance.on('response', (_client, _status, _bytes, ms) => { latencies.push(ms) })
  return {
    stop: () => instance.stop(),
    done: Promise.resolve(instance).then(result => figures(result, latencies))
  }
}

const pause = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms))

/**
 * A warm-up whose figures are dropped, then the measured run. Requests cut
 * off by the end of the warm-up may still be in the service (slow logins
 * queue for bcrypt), so the measured run waits about as long as they take.
 */
export async function measure (load: Load): Promise<Figures> {
  await load.prepare?.()
  const warmup = await fire(load, settings.warmupSeconds).done
  await pause(Math.min(10_000, warmup.p99Ms + 200))
  await load.prepare?.()
  return fire(load, settings.durationSeconds).done
}
