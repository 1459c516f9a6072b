import t from 'tap'
import { chmodSync, copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { buildApp } from '../app'
import { startEmbeddedDatabase } from '../db/embedded'
import { authHeaders, build, growthDir, tempDir, testConfig, unavailableHealth } from './helper'

t.test('health answers ok while the database is up', async t => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/api/health' })
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.same(Object.keys(body).sort(), ['database', 'growth', 'status', 'uptimeSeconds', 'version'])
  t.equal(body.status, 'ok')
  t.equal(body.database, 'ok')
  t.equal(body.growth, 'ok', 'the growth tables are in place')
  t.equal(typeof body.version, 'string')
  t.ok(Number.isInteger(body.uptimeSeconds))
})

t.test('health answers 503 while the database is stopped, and 200 once it is back', async t => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'child-health-fault-'))
  chmodSync(dir, 0o755)
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const quiet = { info: () => {}, debug: () => {}, warn: () => {} }
  let db = await startEmbeddedDatabase(path.join(dir, 'postgres'), quiet)
  t.teardown(() => db.stop())

  const config = testConfig(t, db.url)
  const app = await buildApp(config)
  t.teardown(() => app.close())
  await app.ready()

  t.equal((await app.inject({ method: 'GET', url: '/api/health' })).statusCode, 200)

  await db.stop()
  const started = Date.now()
  const down = await app.inject({ method: 'GET', url: '/api/health' })
  t.ok(Date.now() - started < 6000, 'answers within the probe timeout')
  const body = unavailableHealth(t, down, 'unreachable')
  t.same(body.details, {})
  t.equal(typeof body.error, 'string')
  t.equal(typeof body.version, 'string')
  t.ok(Number.isInteger(body.uptimeSeconds))

  db = await startEmbeddedDatabase(path.join(dir, 'postgres'), quiet)
  const up = await app.inject({ method: 'GET', url: '/api/health' })
  t.equal(up.statusCode, 200, 'recovers without a restart')
  t.equal(up.json().database, 'ok')
})

t.test('without the growth tables health says so and stays 200; tables copied in later are used without a restart', async t => {
  const dir = tempDir(t)
  // No tables, and a download location that refuses at once.
  const app = await build(t, { env: { GROWTH_DATA_DIR: dir, GROWTH_DATA_URL: 'http://127.0.0.1:1/' } })
  await app.growth.loading
  const before = await app.inject({ method: 'GET', url: '/api/health' })
  t.equal(before.statusCode, 200, 'still 200: everything else works')
  t.equal(before.json().growth, 'missing')
  const standards = await app.inject({ method: 'GET', url: '/api/growth-standards/weight-for-age?sex=female&from=0&to=10', headers: await authHeaders(app) })
  t.equal(standards.statusCode, 503)
  t.equal(standards.json().code, 'GROWTH_DATA_MISSING')
  t.match(standards.json().error, /put the nine table files in GROWTH_DATA_DIR, where they are picked up within seconds without a restart/, 'the 503 says how')

  // The table files only: the folder may hold other references beside them.
  for (const entry of readdirSync(growthDir(), { withFileTypes: true })) {
    if (entry.isFile()) copyFileSync(path.join(growthDir(), entry.name), path.join(dir, entry.name))
  }
  let health = before
  for (let tries = 0; tries < 50 && health.json().growth !== 'ok'; tries++) {
    await new Promise(resolve => setTimeout(resolve, 200))
    health = await app.inject({ method: 'GET', url: '/api/health' })
  }
  t.equal(health.json().growth, 'ok', 'health finds them')
  const again = await app.inject({ method: 'GET', url: '/api/growth-standards/weight-for-age?sex=female&from=0&to=10', headers: await authHeaders(app) })
  t.equal(again.statusCode, 200, 'and the growth routes answer, with no restart')
})
