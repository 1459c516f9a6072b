import t, { type Test } from 'tap'
import net from 'node:net'
import { freePort } from '../db/embedded'
import { build, register, PASSWORD, type App } from './helper'

/**
 * The auth rate limits: a bucket per client address on each auth route, and
 * counted in memory while the Redis that shares them does not answer.
 */

const MAX = 10

async function logins (app: App, count: number, email: string, ip = '198.51.100.7'): Promise<number[]> {
  const statuses: number[] = []
  for (let i = 0; i < count; i += 1) {
    const res = await app.inject({ method: 'POST', url: '/api/auth/login', remoteAddress: ip, payload: { email, password: PASSWORD } })
    statuses.push(res.statusCode)
    if (res.statusCode === 429) {
      if (res.json().code !== 'RATE_LIMITED' || !(Number(res.headers['retry-after']) > 0)) throw new Error(`a 429 without its code or Retry-After: ${res.body}`)
    }
  }
  return statuses
}

/** A server that takes connections and never says a word, as a Redis that hangs. */
async function silentServer (t: Test): Promise<number> {
  const sockets = new Set<net.Socket>()
  const server = net.createServer(socket => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>(resolve => {
    for (const socket of sockets) socket.destroy()
    server.close(() => resolve())
  }))
  return (server.address() as net.AddressInfo).port
}

async function until (what: string, ok: () => boolean, ms = 10000): Promise<void> {
  for (let waited = 0; waited < ms; waited += 20) {
    if (ok()) return
    await new Promise(resolve => setTimeout(resolve, 20))
  }
  throw new Error(`${what} did not happen within ${ms} ms`)
}

for (const [outage, redisUrl] of [
  ['nothing listens at its port', async () => `redis://127.0.0.1:${await freePort()}`],
  ['it takes connections and never answers', async (t: Test) => `redis://127.0.0.1:${await silentServer(t)}`]
] as const) {
  t.test(`while REDIS_URL's Redis is unreachable (${outage}), the limits are counted in memory and a warning is logged once`, async t => {
    const logs: string[] = []
    const app = await build(t, {
      logs,
      env: { REGISTRATION: 'open', LOG_LEVEL: 'warn', REDIS_URL: await redisUrl(t), AUTH_RATE_LIMIT_MAX: String(MAX), AUTH_RATE_LIMIT_WINDOW: '60' }
    })
    const user = await register(app)
    const statuses = await logins(app, 24, user.user.email)
    t.same(statuses, [...Array(MAX).fill(200), ...Array(24 - MAX).fill(429)], 'the 11th login of 24 from one address meets a 429')
    t.equal((await logins(app, 1, user.user.email, '198.51.100.8'))[0], 200, 'another address has its own count')
    if (outage === 'nothing listens at its port') {
      await until('the warning', () => logs.some(line => line.includes('Redis is unreachable')))
      const warnings = logs.filter(line => line.includes('Redis is unreachable'))
      t.equal(warnings.length, 1, 'one warning, not one a request or a reconnection')
      t.equal(JSON.parse(warnings[0]).level, 40, 'at level warn')
      t.match(warnings[0], /counted in this instance's memory/)
    }
  })
}
