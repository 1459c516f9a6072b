/**
 * Live updates under load: 50 event streams of one family (10 users, 5
 * streams each, the most a user may open), 200 changes written one after
 * another through the API, and for each the time from its 201 to its arrival
 * on all 50 streams. Everything runs over real HTTP on 127.0.0.1, the service
 * in this process.
 *
 *   npm run bench:events
 *   BENCH_WRITES=1000 npm run bench:events
 *
 * Uses DATABASE_URL's server when set (in a scratch database, dropped at the
 * end), otherwise an embedded PostgreSQL in a temporary directory. The report
 * is printed and written to bench/events.json.
 */
import { writeFileSync } from 'node:fs'
import http from 'node:http'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { request } from './lib/api'
import { onServer, scratchApp } from './lib/scratch'

const USERS = 10
const STREAMS_PER_USER = 5
const WRITES = Number(process.env.BENCH_WRITES ?? 200)
const PASSWORD = 'bench password 1'
/** How long the last changes may take to arrive before the run counts them as lost. */
const ARRIVAL_TIMEOUT_MS = 10_000

interface Report {
  streams: number
  users: number
  writes: number
  /** Milliseconds from a write's 201 to its arrival on every stream. */
  latencyMs: { p50: number, p95: number, p99: number, max: number, mean: number }
  /** Milliseconds of the writes themselves, request to 201. */
  writeMs: { p50: number, p95: number, max: number }
  /** Changes that did not reach every stream within ARRIVAL_TIMEOUT_MS. */
  lost: number
  writesPerSecond: number
}

/** An open event stream that notes when each measurement arrives. */
interface Listener {
  arrivals: Map<number, number>
  close: () => void
}

const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity })

function listen (origin: string, familyId: number, token: string): Promise<Listener> {
  return new Promise((resolve, reject) => {
    const arrivals = new Map<number, number>()
    const req = http.get(`${origin}/api/families/${familyId}/events`, { agent, headers: { authorization: `Bearer ${token}` } }, res => {
      if (res.statusCode !== 200) return reject(new Error(`events answered ${res.statusCode ?? 0}`))
      res.setEncoding('utf8')
      let pending = ''
      res.on('data', (chunk: string) => {
        const now = performance.now()
        pending += chunk
        let end: number
        while ((end = pending.indexOf('\n\n')) >= 0) {
          const block = pending.slice(0, end)
          pending = pending.slice(end + 2)
          const data = block.split('\n').find(line => line.startsWith('data: '))
          if (data === undefined) continue
          const change = JSON.parse(data.slice(6))
          if (change.kind === 'measurement') arrivals.set(change.id, now)
        }
      })
      res.on('error', () => {})
      resolve({ arrivals, close: () => req.destroy() })
    })
    req.on('error', reject)
  })
}

function percentile (sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p / 100 * sorted.length) - 1))]
}

const round = (value: number): number => Math.round(value * 100) / 100

async function run (serverUrl: string): Promise<Report> {
  const { origin, drop } = await scratchApp(serverUrl, 'events', { LOG_LEVEL: 'warn', AUTH_RATE_LIMIT_MAX: '1000' })
  const listeners: Listener[] = []
  try {
    await request(origin, 'POST', '/api/auth/register', null, { email: 'admin@example.org', password: PASSWORD, name: 'Admin' })
    const owner = await request(origin, 'POST', '/api/auth/register', null, { email: 'owner@example.org', password: PASSWORD, name: 'Owner' })
    const familyId = (await request(origin, 'GET', '/api/me', owner.accessToken)).families[0].id as number
    const tokens: string[] = [owner.accessToken]
    for (let i = 1; i < USERS; i++) {
      const email = `parent${i}@example.org`
      const invite = await request(origin, 'POST', `/api/families/${familyId}/invites`, owner.accessToken, { email, role: i % 2 === 0 ? 'viewer' : 'member' })
      tokens.push((await request(origin, 'POST', '/api/auth/register', null, { email, password: PASSWORD, name: `Parent ${i}`, inviteToken: invite.token })).accessToken)
    }
    const child = await request(origin, 'POST', '/api/children', owner.accessToken, { name: 'Kim', dateOfBirth: '2021-06-01', sex: 'female', familyId })

    for (const token of tokens) {
      for (let s = 0; s < STREAMS_PER_USER; s++) listeners.push(await listen(origin, familyId, token))
    }

    const written: Array<{ id: number, at: number, took: number }> = []
    const started = performance.now()
    for (let i = 0; i < WRITES; i++) {
      const sent = performance.now()
      const measurement = await request(origin, 'POST', `/api/children/${child.id as number}/measurements`, owner.accessToken, {
        measuredAt: '2022-01-01', weightKg: 8 + i / 1000
      })
      const at = performance.now()
      written.push({ id: measurement.id, at, took: at - sent })
    }
    const writing = performance.now() - started

    const everywhere = (id: number): boolean => listeners.every(listener => listener.arrivals.has(id))
    for (const stop = performance.now() + ARRIVAL_TIMEOUT_MS; performance.now() < stop;) {
      if (written.every(write => everywhere(write.id))) break
      await new Promise(resolve => setTimeout(resolve, 20))
    }

    const latencies: number[] = []
    let lost = 0
    for (const write of written) {
      if (!everywhere(write.id)) {
        lost += 1
        continue
      }
      const last = Math.max(...listeners.map(listener => listener.arrivals.get(write.id) as number))
      // A change can reach the streams before its 201 reaches the writer: that counts as 0.
      latencies.push(Math.max(0, last - write.at))
    }
    latencies.sort((a, b) => a - b)
    const writes = written.map(write => write.took).sort((a, b) => a - b)
    return {
      streams: listeners.length,
      users: USERS,
      writes: WRITES,
      latencyMs: {
        p50: round(percentile(latencies, 50)),
        p95: round(percentile(latencies, 95)),
        p99: round(percentile(latencies, 99)),
        max: round(latencies[latencies.length - 1]),
        mean: round(latencies.reduce((sum, value) => sum + value, 0) / latencies.length)
      },
      writeMs: { p50: round(percentile(writes, 50)), p95: round(percentile(writes, 95)), max: round(writes[writes.length - 1]) },
      lost,
      writesPerSecond: round(WRITES / (writing / 1000))
    }
  } finally {
    for (const listener of listeners) listener.close()
    await drop()
  }
}

async function main (): Promise<void> {
  await onServer(async serverUrl => {
    const report = await run(serverUrl)
    const { latencyMs: l, writeMs: w } = report
    console.log(`live updates: ${report.streams} streams of one family (${report.users} users × ${STREAMS_PER_USER}), ${report.writes} writes one after another`)
    console.log(`201 to arrival on all streams: p50 ${l.p50} ms, p95 ${l.p95} ms, p99 ${l.p99} ms, max ${l.max} ms (mean ${l.mean} ms)`)
    console.log(`writes: p50 ${w.p50} ms, p95 ${w.p95} ms, max ${w.max} ms; ${report.writesPerSecond} writes/s`)
    console.log(`lost: ${report.lost}`)
    writeFileSync(path.join(__dirname, 'events.json'), JSON.stringify(report, null, 2) + '\n')
    if (report.lost > 0) process.exitCode = 1
  })
}

main().catch(error => {
  console.error(error)
  process.exit(1)
})
