import t from 'tap'
import { spawn } from 'node:child_process'
import net from 'node:net'
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { buildApp } from '../app'
import { freePort, startEmbeddedDatabase } from '../db/embedded'
import { bearer, build, growthDir, register, testConfig, testDatabase, TEST_ENV, type App, type Pair } from './helper'
import { containWriteAfterClose, isStrayConnectionError, isWriteAfterClose } from '../db/write-after-close'

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

t.test('a backend that dies inside a transaction fails that request and the server lives on', async t => {
  // postgres.js writes the transaction's next statement to the dead
  // connection and throws where no caller can catch it (porsager/postgres#1208):
  // the service contains that one error.
  const db = await testDatabase(t)
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'child-health-faults-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const port = await freePort()
  const server = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'fixtures', 'pausing-server.ts')], {
    env: { PATH: process.env.PATH ?? '', ...TEST_ENV, GROWTH_DATA_DIR: growthDir(), DATA_DIR: dataDir, DATABASE_URL: db.url, PORT: String(port), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let output = ''
  server.stdout.on('data', chunk => { output += chunk })
  server.stderr.on('data', chunk => { output += chunk })
  const exited = new Promise<number | null>(resolve => server.on('exit', code => resolve(code)))
  t.teardown(() => { server.kill('SIGKILL') })
  const base = `http://127.0.0.1:${port}`
  for (let waited = 0; waited < 30000; waited += 200) {
    if (await fetch(`${base}/api/health`).then(res => res.ok, () => false)) break
    await new Promise(resolve => setTimeout(resolve, 200))
  }

  for (let round = 1; round <= 2; round += 1) {
    const request = fetch(`${base}/test/pausing-transaction`, { method: 'POST' })
    let pid: number | undefined
    for (let waited = 0; pid === undefined && waited < 5000; waited += 20) {
      const [row] = await db.sql<{ pid: number }[]>`
        select pid from pg_stat_activity where datname = current_database() and state = 'idle in transaction'
      `
      pid = row?.pid
      if (pid === undefined) await new Promise(resolve => setTimeout(resolve, 20))
    }
    t.ok(pid !== undefined, `round ${round}: the transaction waits between its statements`)
    await db.sql`select pg_terminate_backend(${pid as number})`
    const res = await request
    t.equal(res.status, 503, `round ${round}: the request whose connection died is a 503`)
    t.equal(((await res.json()) as { code: string }).code, 'SERVICE_UNAVAILABLE')
    // The transaction's callback goes on after its connection died: its next
    // statement is the write that would end the process.
    await new Promise(resolve => setTimeout(resolve, 1500))
    t.equal(server.exitCode, null, `round ${round}: the server process is still running`)
    t.equal((await fetch(`${base}/api/health`)).status, 200, `round ${round}: health is ok`)
  }
  const contained = output.match(/a database connection closed while postgres\.js wrote to it/g)?.length ?? 0
  // When the pool has reopened the dead connection meanwhile, the write finds a socket and nothing is thrown.
  t.ok(contained >= 1, `each contained error is logged as a warning (${contained} for 2 dead connections)`)
  const done = await fetch(`${base}/test/pausing-transaction`, { method: 'POST' })
  t.equal(done.status, 200, 'transactions work again')
  server.kill('SIGTERM')
  t.equal(await exited, 0, 'and it shuts down cleanly')
})

t.test('a lost connection\'s stray rejection is contained, and no other', async t => {
  const stray = Object.assign(new Error('write CONNECTION_CLOSED 127.0.0.1:5432'), { code: 'CONNECTION_CLOSED' })
  stray.stack = `Error: ${stray.message}\n    at Socket.closed (/srv/app/node_modules/postgres/cjs/src/connection.js:453:57)\n    at Socket.emit (node:events:536:35)`
  t.ok(isStrayConnectionError(stray), 'postgres.js\'s own connection error is')
  const mine = Object.assign(new Error('CONNECTION_CLOSED'), { code: 'CONNECTION_CLOSED' })
  t.notOk(isStrayConnectionError(mine), 'the same code from elsewhere is not')
  const other = Object.assign(new Error('duplicate key'), { code: '23505' })
  other.stack = `Error: duplicate key\n    at /srv/app/node_modules/postgres/cjs/src/connection.js:790:26`
  t.notOk(isStrayConnectionError(other), 'another error of postgres.js is not')
  t.notOk(isStrayConnectionError('CONNECTION_CLOSED'), 'nor a string')

  const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', errno: -104, syscall: 'read' })
  reset.stack = 'Error: read ECONNRESET\n    at TCP.onStreamRead (node:internal/stream_base_commons:216:20)'
  t.ok(isStrayConnectionError(reset), 'a socket\'s reset, as Node raised it, is')
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:45545'), { code: 'ECONNREFUSED', syscall: 'connect' })
  refused.stack = 'Error: connect ECONNREFUSED 127.0.0.1:45545\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1638:16)'
  t.ok(isStrayConnectionError(refused), 'a refused connection, as Node raised it, is')
  const made = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', syscall: 'read' })
  made.stack = 'Error: read ECONNRESET\n    at send (/srv/app/lib/channels/ntfy.js:12:9)\n    at TCP.onStreamRead (node:internal/stream_base_commons:216:20)'
  t.notOk(isStrayConnectionError(made), 'the same error passed through the service\'s own code is not')
  const file = Object.assign(new Error('EPIPE'), { code: 'EPIPE', syscall: 'open' })
  file.stack = 'Error: EPIPE\n    at node:fs:10:1'
  t.notOk(isStrayConnectionError(file), 'nor an error of another call than a socket\'s')
})

t.test('a socket reset that rejects a promise nobody waits for leaves the process running', async t => {
  const warnings: string[] = []
  containWriteAfterClose(message => warnings.push(message))
  // A server that resets every connection as soon as it has read from it.
  const server = net.createServer(socket => { socket.once('data', () => socket.resetAndDestroy()) })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { server.close() })
  const { port } = server.address() as net.AddressInfo
  let stray: Error | undefined
  // Nobody waits on this promise: its rejection is unhandled.
  void new Promise((_resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write('hello'))
    socket.once('error', error => { stray = error; reject(error) })
  })
  for (let tries = 0; tries < 100 && warnings.length === 0; tries++) await new Promise(resolve => setTimeout(resolve, 20))
  t.equal((stray as { code?: string } | undefined)?.code, 'ECONNRESET', 'the socket was reset')
  t.match(warnings.join('\n'), /a database connection was lost with nobody waiting on it: read ECONNRESET/, 'the rejection is logged as a warning')
})

t.test('only that error of postgres.js is contained', async t => {
  const stray = new TypeError("Cannot read properties of null (reading 'write')")
  t.notOk(isWriteAfterClose(stray), 'the same message from elsewhere is not')
  const real = new TypeError("Cannot read properties of null (reading 'write')")
  real.stack = `TypeError: ${real.message}\n    at Immediate.nextWrite (/srv/app/node_modules/postgres/cjs/src/connection.js:255:22)\n    at process.processImmediate (node:internal/timers:483:21)`
  t.ok(isWriteAfterClose(real), 'the one from nextWrite in postgres.js is')
  const other = new TypeError('x is not a function')
  other.stack = `TypeError: x is not a function\n    at Immediate.nextWrite (/srv/app/node_modules/postgres/cjs/src/connection.js:255:22)`
  t.notOk(isWriteAfterClose(other), 'another error in the same place is not')
})
