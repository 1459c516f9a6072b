import os from 'node:os'
import path from 'node:path'
import { startProcess, stopProcess, type Running } from './processes'
import { baseEnv, ROOT, startService } from './service'
import { settings } from './settings'

/**
 * The password flood: one account sends wrong password changes in 64 loops
 * without pause, from a process of its own at nice 19 (the attacker's
 * machine), while another user logs in again and again. The login's time is
 * compared with its time alone. It runs against a service of its own at the
 * production cost of bcrypt (12), whose accounts are hashed at that cost.
 */

export const FLOOD = {
  bcryptCost: 12,
  loops: 64,
  nice: 19,
  /** The victim's logins in each phase, one after the other. */
  logins: 40,
  /** The target: the login under the flood within 2 × its time alone + 100 ms, at p50 and at p99. */
  factor: 2,
  slackMs: 100
}

export interface LoginTimes {
  logins: number
  p50Ms: number
  p99Ms: number
  maxMs: number
}

export interface AttackerCounts {
  statuses: Record<string, number>
  errors: number
  requests: number
  perSecond: number
}

export interface FloodRun {
  logins: LoginTimes
  attacker: AttackerCounts
}

export interface FloodReport {
  bcryptCost: number
  loops: number
  attackerNice: number
  quiet: LoginTimes
  flood: FloodRun
  floodHonoringRetryAfter: FloodRun
  /** The machine's load average (1, 5, 15 minutes) before and after the scenario. */
  loadAverage: { before: number[], after: number[] }
}

const round = (value: number): number => Number(value.toFixed(1))

function percentile (sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]
}

async function post (url: string, body: unknown, token?: string): Promise<{ status: number, json: any }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000)
  })
  const text = await res.text()
  return { status: res.status, json: text === '' ? null : JSON.parse(text) }
}

/** The victim's logins, `count` of them one after the other: each must succeed. */
async function logins (serviceUrl: string, email: string, count: number): Promise<LoginTimes> {
  const times: number[] = []
  while (times.length < count) {
    const start = process.hrtime.bigint()
    const { status, json } = await post(`${serviceUrl}/api/auth/login`, { email, password: settings.password })
    const ms = Number(process.hrtime.bigint() - start) / 1e6
    if (status !== 200) throw new Error(`the victim's login answered ${status}: ${JSON.stringify(json)}`)
    times.push(ms)
  }
  times.sort((a, b) => a - b)
  return { logins: times.length, p50Ms: round(percentile(times, 0.5)), p99Ms: round(percentile(times, 0.99)), maxMs: round(times[times.length - 1]) }
}

function attacker (serviceUrl: string, token: string, honorRetryAfter: boolean): Running {
  const env = { ...baseEnv(), SERVICE_URL: serviceUrl, TOKEN: token, LOOPS: String(FLOOD.loops), HONOR_RETRY_AFTER: honorRetryAfter ? '1' : '0' }
  return startProcess('the password flood', ['--import', 'tsx', path.join('bench', 'attackers', 'password-flood.ts')], env, ROOT, { nice: FLOOD.nice })
}

/** The first JSON line of the process's output that has `field`. */
function line<T> (running: Running, field: string, timeoutMs = 30_000): Promise<T> {
  return new Promise((resolve, reject) => {
    let buffered = ''
    const timer = setTimeout(() => reject(new Error(`${running.name} printed no ${field} within ${timeoutMs / 1000} s\n${running.tail()}`)), timeoutMs)
    const onData = (chunk: Buffer): void => {
      buffered += chunk.toString('utf8')
      for (const text of buffered.split('\n')) {
        if (!text.startsWith('{')) continue
        try {
          const parsed = JSON.parse(text) as Record<string, unknown>
          if (!(field in parsed)) continue
          clearTimeout(timer)
          running.child.stdout?.off('data', onData)
          resolve(parsed as T)
          return
        } catch {}
      }
    }
    running.child.stdout?.on('data', onData)
  })
}

const pause = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms))

async function underFlood (serviceUrl: string, token: string, email: string, honorRetryAfter: boolean): Promise<FloodRun> {
  const flood = attacker(serviceUrl, token, honorRetryAfter)
  try {
    await line(flood, 'ready')
    // The flood in its stride: every loop has been answered, and the service's queue holds the account's share.
    await pause(1000)
    const times = await logins(serviceUrl, email, FLOOD.logins)
    const counts = line<AttackerCounts>(flood, 'statuses')
    flood.child.kill('SIGTERM')
    const attack = await counts
    return { logins: times, attacker: attack }
  } finally {
    await stopProcess(flood)
  }
}

/** The whole scenario, on a service of its own against the run's database. */
export async function passwordFlood (databaseUrl: string, dir: string): Promise<FloodReport> {
  const before = os.loadavg().map(round)
  const service = await startService(databaseUrl, dir, { name: 'service-bcrypt-12', env: { BCRYPT_COST: String(FLOOD.bcryptCost) } })
  const account = async (email: string): Promise<string> => {
    const { status, json } = await post(`${service.url}/api/auth/register`, { email, password: settings.password, name: email })
    if (status !== 201) throw new Error(`registering ${email} answered ${status}: ${JSON.stringify(json)}`)
    return json.accessToken as string
  }
  let quiet: LoginTimes, flood: FloodRun, floodHonoringRetryAfter: FloodRun
  try {
    const attackerToken = await account('flood-attacker@example.org')
    const victim = 'flood-victim@example.org'
    await account(victim)
    await logins(service.url, victim, 5)
    quiet = await logins(service.url, victim, FLOOD.logins)
    flood = await underFlood(service.url, attackerToken, victim, false)
    floodHonoringRetryAfter = await underFlood(service.url, attackerToken, victim, true)
  } finally {
    await service.stop()
  }
  return {
    bcryptCost: FLOOD.bcryptCost,
    loops: FLOOD.loops,
    attackerNice: FLOOD.nice,
    quiet,
    flood,
    floodHonoringRetryAfter,
    loadAverage: { before, after: os.loadavg().map(round) }
  }
}

/** The login's time under each flood against 2 × its time alone + 100 ms, at p50 and p99. */
export function floodTargets (report: FloodReport): Array<{ target: string, figure: string, met: boolean }> {
  const list: Array<{ target: string, figure: string, met: boolean }> = []
  for (const [what, run] of [['a flood of wrong password changes', report.flood], ['the same flood honoring Retry-After', report.floodHonoringRetryAfter]] as const) {
    for (const at of ['p50Ms', 'p99Ms'] as const) {
      const limit = FLOOD.factor * report.quiet[at] + FLOOD.slackMs
      list.push({
        target: `login ${at.slice(0, 3)} under ${what} (${report.loops} loops of one account, bcrypt cost ${report.bcryptCost}) ≤ ${FLOOD.factor} × alone + ${FLOOD.slackMs} ms`,
        figure: `${run.logins[at]} ms against ${report.quiet[at]} ms alone (limit ${round(limit)} ms); the flood: ${run.attacker.perSecond} req/s, ${JSON.stringify(run.attacker.statuses)}`,
        met: run.logins[at] <= limit
      })
    }
  }
  return list
}

/** The scenario's lines for the console. */
export function floodLines (report: FloodReport): string {
  const times = (t: LoginTimes): string => `p50 ${t.p50Ms} ms, p99 ${t.p99Ms} ms, max ${t.maxMs} ms (${t.logins} logins)`
  const attack = (a: AttackerCounts): string => `${a.requests} requests, ${a.perSecond} req/s: ${Object.entries(a.statuses).map(([status, count]) => `${count} × ${status}`).join(', ')}${a.errors > 0 ? `, ${a.errors} errors` : ''}`
  return [
    `Password flood (bcrypt cost ${report.bcryptCost}, ${report.loops} loops at nice ${report.attackerNice}; load average ${report.loadAverage.before.join(' ')} before, ${report.loadAverage.after.join(' ')} after):`,
    `  login alone:                        ${times(report.quiet)}`,
    `  login under the flood:              ${times(report.flood.logins)}; the flood: ${attack(report.flood.attacker)}`,
    `  login, the flood honoring Retry-After: ${times(report.floodHonoringRetryAfter.logins)}; the flood: ${attack(report.floodHonoringRetryAfter.attacker)}`
  ].join('\n')
}
