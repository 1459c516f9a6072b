import t from 'tap'
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { buildApp } from '../app'
import { startEmbeddedDatabase } from '../lib/embedded-db'
import { bearer, build, register, testConfig, type App, type Pair } from './helper'

const OPEN = { REGISTRATION: 'open' }
const QUIET = { info: () => {}, debug: () => {}, warn: () => {} }

async function childOf (app: App, owner: Pair): Promise<number> {
  const res = await app.inject({ method: 'POST', url: '/api/children', headers: bearer(owner.accessToken), payload: { name: 'Kim', dateOfBirth: '2020-01-01', sex: 'female' } })
  return res.json().id
}

t.test('the database stops in the middle of traffic and comes back', async t => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'child-health-faults-'))
  chmodSync(dir, 0o755)
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  let db = await startEmbeddedDatabase(path.join(dir, 'postgres'), QUIET)
  t.teardown(() => db.stop())
  const app = await buildApp(testConfig(t, db.url, OPEN))
  t.teardown(() => app.close())
  await app.ready()
  const owner = await register(app)
  const childId = await childOf(app, owner)

  const acknowledged: number[] = []
  const statuses = new Map<number, number>()
  let slowest = 0
  let running = true
  let day = 0
  const writer = async (): Promise<void> => {
    while (running) {
      day += 1
      const measuredAt = new Date(Date.UTC(2020, 0, 1) + (day % 1500) * 86400000).toISOString().slice(0, 10)
      const started = Date.now()
      const res = await app.inject({ method: 'POST', url: `/api/children/${childId}/measurements`, headers: bearer(owner.accessToken), payload: { measuredAt, weightKg: 10 } })
      slowest = Math.max(slowest, Date.now() - started)
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
      if (res.statusCode === 201) acknowledged.push(res.json().id)
      else {
        t.equal(res.statusCode, 503, 'a failure is a 503')
        t.equal(res.json().code, 'SERVICE_UNAVAILABLE')
        t.equal(res.headers['retry-after'], '5')
        await new Promise(resolve => setTimeout(resolve, 20))
      }
    }
  }
  const writers = [writer(), writer(), writer(), writer()]
  await new Promise(resolve => setTimeout(resolve, 500))
  await db.stop()
  const health = await app.inject({ method: 'GET', url: '/api/health' })
  t.equal(health.statusCode, 503, 'health says the database is down')
  await new Promise(resolve => setTimeout(resolve, 1000))
  db = await startEmbeddedDatabase(path.join(dir, 'postgres'), QUIET)
  await new Promise(resolve => setTimeout(resolve, 1000))
  running = false
  await Promise.all(writers)

  t.ok((statuses.get(503) ?? 0) > 0, `requests failed while the database was down (${JSON.stringify(Object.fromEntries(statuses))})`)
  t.ok(slowest < 10000, `no request hung (slowest ${slowest} ms)`)
  t.equal((await app.inject({ method: 'GET', url: '/api/health' })).statusCode, 200, 'health recovers without a restart')
  const after = await app.inject({ method: 'POST', url: `/api/children/${childId}/measurements`, headers: bearer(owner.accessToken), payload: { measuredAt: '2021-01-01', weightKg: 11 } })
  t.equal(after.statusCode, 201, 'writes work again')
  const rows = await app.sql<{ id: number }[]>`select id from measurements where id in ${app.sql(acknowledged)}`
  t.equal(rows.length, acknowledged.length, `every acknowledged write (${acknowledged.length}) is there`)
})

t.test('concurrent writers: every 201 is exactly one row, and no 5xx', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const childId = await childOf(app, owner)
  const ids: number[] = []
  const failures: number[] = []
  const until = Date.now() + 3000
  let n = 0
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (Date.now() < until) {
      n += 1
      const res = await app.inject({
        method: 'POST',
        url: n % 2 === 0 ? `/api/children/${childId}/measurements` : '/api/visits',
        headers: bearer(owner.accessToken),
        payload: n % 2 === 0 ? { measuredAt: '2021-06-01', heightCm: 80 + (n % 100) / 10 } : { childId, date: '2021-06-01', type: 'wellness', measurement: { weightKg: 12 } }
      })
      if (res.statusCode === 201) ids.push(res.json().measurement?.id ?? res.json().id)
      else failures.push(res.statusCode)
    }
  }))
  t.same(failures, [], 'every write succeeded')
  t.ok(ids.length > 50, `${ids.length} writes acknowledged`)
  const [{ total }] = await app.sql`select count(*) as total from measurements`
  t.equal(total, ids.length, 'one row per acknowledged write')
  const [{ orphans }] = await app.sql`select count(*) as orphans from visits v where not exists (select 1 from measurements m where m.visit_id = v.id)`
  t.equal(orphans, 0, 'no visit without its measurement')
})

t.test('postgres.js is mended so that a write after a close cannot end the process', async t => {
  const { readFileSync } = await import('node:fs')
  const file = require.resolve('postgres').replace(/index\.js$/, 'connection.js')
  t.match(readFileSync(file, 'utf8'), /function nextWrite\(fn\) \{\n\s+if \(!socket\) \{/, 'the guard of scripts/patch-postgres.js is installed')
})
