import t, { type Test } from 'tap'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { randomInt } from 'node:crypto'
import { Writable } from 'node:stream'
import { buildApp } from '../../app'
import { freePort } from '../../db/embedded'
import { PASSWORD, testConfig, testDatabase, type App, type TestDatabase } from '../helper'

/**
 * The rate limits of several instances, counted in one Redis. Run with
 * `npm run test:redis`, which needs TEST_REDIS_URL (.ci/run provides it).
 */
const REDIS = process.env.TEST_REDIS_URL
if (REDIS === undefined || REDIS === '') {
  throw new Error('TEST_REDIS_URL is not set: run these tests with npm run test:redis against a Redis (see .ci/run)')
}

async function instance (t: Test, db: TestDatabase, redisUrl: string, logs?: string[]): Promise<App> {
  const logStream = logs === undefined
    ? undefined
    : new Writable({ write (chunk, _encoding, done) { logs.push(chunk.toString()); done() } })
  const env = { REGISTRATION: 'open', REDIS_URL: redisUrl, AUTH_RATE_LIMIT_MAX: '10', AUTH_RATE_LIMIT_WINDOW: '60', ...(logs === undefined ? {} : { LOG_LEVEL: 'warn' }) }
  const app = await buildApp(testConfig(t, db.url, env), { logStream })
  t.teardown(() => app.close())
  await app.ready()
  return app
}

/** A client address of this run's own, so that no other run's counters meet it. */
function clientAddress (): string {
  return `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`
}

async function login (app: App, ip: string, email: string): Promise<number> {
  const res = await app.inject({ method: 'POST', url: '/api/auth/login', remoteAddress: ip, payload: { email, password: PASSWORD } })
  return res.statusCode
}

t.test('the auth rate limits count across two instances', async t => {
  const db = await testDatabase(t)
  const [a, b] = await Promise.all([instance(t, db, REDIS), instance(t, db, REDIS)])
  const email = `limited${randomInt(1e9)}@example.org`
  t.equal((await a.inject({ method: 'POST', url: '/api/auth/register', remoteAddress: clientAddress(), payload: { email, password: PASSWORD, name: 'L' } })).statusCode, 201)
  const ip = clientAddress()
  const statuses: number[] = []
  for (let i = 0; i < 10; i += 1) statuses.push(await login(i % 2 === 0 ? a : b, ip, email))
  t.same(statuses, Array(10).fill(200), 'ten logins in a window pass, alternating between the instances')
  const eleventh = await a.inject({ method: 'POST', url: '/api/auth/login', remoteAddress: ip, payload: { email, password: PASSWORD } })
  t.equal(eleventh.statusCode, 429, 'the 11th is refused by the one')
  t.ok(Number(eleventh.headers['retry-after']) > 0, 'with Retry-After')
  t.equal(await login(b, ip, email), 429, 'and by the other')
  const other = `other${randomInt(1e9)}@example.org`
  t.equal((await a.inject({ method: 'POST', url: '/api/auth/register', remoteAddress: clientAddress(), payload: { email: other, password: PASSWORD, name: 'O' } })).statusCode, 201)
  t.equal(await login(b, clientAddress(), other), 200, 'another client address has its own count')
  t.equal(await login(b, clientAddress(), email), 429, 'but not the account, counted on both instances whatever the address')
})

function redisServer (port: number): ChildProcess {
  return spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
}

async function until (what: string, ok: () => Promise<boolean>, ms = 10000): Promise<void> {
  for (let waited = 0; waited < ms; waited += 100) {
    if (await ok()) return
    await new Promise(resolve => setTimeout(resolve, 100))
  }
  throw new Error(`${what} did not happen within ${ms} ms`)
}

/**
 * Whether two instances count in one Redis: ten logins from a fresh address
 * alternate between them, each for an e-mail of its own, and the eleventh is
 * refused only when both counted all ten.
 */
async function sharedCounts (a: App, b: App): Promise<boolean> {
  const ip = clientAddress()
  const unknown = () => ({ email: `nobody${randomInt(1e9)}@example.org`, password: PASSWORD })
  for (let i = 0; i < 10; i += 1) {
    const res = await (i % 2 === 0 ? a : b).inject({ method: 'POST', url: '/api/auth/login', remoteAddress: ip, payload: unknown() })
    if (res.statusCode === 429) return false
  }
  const eleventh = await a.inject({ method: 'POST', url: '/api/auth/login', remoteAddress: ip, payload: unknown() })
  return eleventh.statusCode === 429
}

t.test('while Redis is unreachable each instance counts in memory and warns once; once it is back the counts are shared again', async t => {
  if (spawnSync('redis-server', ['--version']).status !== 0) {
    t.comment('redis-server is not installed here: a Redis that goes away and comes back is left untested (test/rate-limits.test.ts covers one that is away)')
    return
  }
  const db = await testDatabase(t)
  const port = await freePort()
  const logs: string[] = []
  let server = redisServer(port)
  t.teardown(() => { server.kill('SIGKILL') })
  const url = `redis://127.0.0.1:${port}`
  const [a, b] = await Promise.all([instance(t, db, url, logs), instance(t, db, url)])
  const email = `away${randomInt(1e9)}@example.org`
  await a.inject({ method: 'POST', url: '/api/auth/register', remoteAddress: clientAddress(), payload: { email, password: PASSWORD, name: 'A' } })
  await until('the instances counting in their Redis', () => sharedCounts(a, b))

  const running = server
  running.kill('SIGTERM')
  await new Promise(resolve => running.once('exit', resolve))
  const ip = clientAddress()
  const statuses: number[] = []
  for (let i = 0; i < 14; i += 1) statuses.push(await login(a, ip, email))
  t.same(statuses, [...Array(10).fill(200), ...Array(4).fill(429)], 'logins from one address are still limited, counted in memory')
  t.equal(await login(b, ip, email), 200, 'each instance counts in its own memory')
  await until('the warning', async () => logs.some(line => line.includes('Redis is unreachable')))
  for (let i = 0; i < 14; i += 1) await login(a, clientAddress(), email)
  const warnings = logs.filter(line => line.includes('Redis is unreachable'))
  t.equal(warnings.length, 1, 'one warning, not one a request')
  t.equal(JSON.parse(warnings[0]).level, 40, 'at level warn')

  server = redisServer(port)
  await until('the counts to be shared again', () => sharedCounts(a, b), 20000)
  t.pass('once Redis is back, the instances share their counts again')
})

t.test('a Redis that was never there: the service starts and serves', async t => {
  const db = await testDatabase(t)
  const closed = await freePort()
  const logs: string[] = []
  const app = await instance(t, db, `redis://127.0.0.1:${closed}`, logs)
  const res = await app.inject({ method: 'POST', url: '/api/auth/register', remoteAddress: clientAddress(), payload: { email: `n${randomInt(1e9)}@example.org`, password: PASSWORD, name: 'N' } })
  t.equal(res.statusCode, 201)
  await until('the warning', async () => logs.some(line => line.includes('Redis is unreachable')))
  t.pass('and warns')
})
