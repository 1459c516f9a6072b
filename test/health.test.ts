import t from 'tap'
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { buildApp } from '../app'
import { startEmbeddedDatabase } from '../db/embedded'
import { build, testConfig } from './helper'

t.test('health answers ok while the database is up', async t => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/api/health' })
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.same(Object.keys(body).sort(), ['database', 'status', 'uptimeSeconds', 'version'])
  t.equal(body.status, 'ok')
  t.equal(body.database, 'ok')
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
  t.equal(down.statusCode, 503)
  t.equal(down.headers['retry-after'], '5')
  const body = down.json()
  t.equal(body.status, 'unavailable')
  t.equal(body.database, 'unreachable')
  t.equal(body.code, 'SERVICE_UNAVAILABLE')
  t.same(body.details, {})
  t.equal(typeof body.error, 'string')
  t.equal(typeof body.version, 'string')
  t.ok(Number.isInteger(body.uptimeSeconds))

  db = await startEmbeddedDatabase(path.join(dir, 'postgres'), quiet)
  const up = await app.inject({ method: 'GET', url: '/api/health' })
  t.equal(up.statusCode, 200, 'recovers without a restart')
  t.equal(up.json().database, 'ok')
})
