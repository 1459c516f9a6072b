import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { buildApp, type App } from '../app'
import { startEmbeddedDatabase } from '../db/embedded'
import { bearer, build, familyOf, join, register, testConfig, unavailableHealth, type Pair } from './helper'

// Fair use over real HTTP: sockets that do not read, headers that trickle in,
// a database that hangs. `inject` has no sockets, so every request here goes
// through the app listening on 127.0.0.1.

const OPEN = { REGISTRATION: 'open' }
const MB = 1024 * 1024

interface Server {
  app: App
  port: number
  origin: string
}

async function listening (app: App): Promise<Server> {
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as net.AddressInfo
  return { app, port, origin: `http://127.0.0.1:${port}` }
}

async function child (app: App, pair: Pair): Promise<number> {
  const res = await app.inject({
    method: 'POST',
    url: '/api/children',
    headers: bearer(pair.accessToken),
    payload: { name: 'Kim', dateOfBirth: '2021-06-01', sex: 'female', familyId: familyOf(pair) }
  })
  if (res.statusCode !== 201) throw new Error(`child answered ${res.statusCode}: ${res.body}`)
  return res.json().id
}

/** Attachments big enough that an export does not fit in the sockets' buffers. */
async function bigFiles (app: App & { db: { sql: any } }, childId: number, count: number, size: number): Promise<void> {
  mkdirSync(app.config.uploadDir, { recursive: true })
  for (let i = 0; i < count; i++) {
    const storedName = `${randomBytes(16).toString('hex')}.pdf`
    const bytes = Buffer.concat([Buffer.from('%PDF-1.4\n'), randomBytes(size)])
    writeFileSync(path.join(app.config.uploadDir, storedName), bytes)
    await app.db.sql`
      insert into attachments (child_id, file_name, stored_name, content_type, size_bytes)
      values (${childId}, ${`scan ${i}.pdf`}, ${storedName}, 'application/pdf', ${bytes.length})
    `
  }
}

async function someMeasurements (app: App, pair: Pair, childId: number, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const day = String(1 + (i % 28)).padStart(2, '0')
    const res = await app.inject({
      method: 'POST',
      url: `/api/children/${childId}/measurements`,
      headers: bearer(pair.accessToken),
      payload: { measuredAt: `2022-0${1 + (i % 9)}-${day}`, weightKg: 8 + i / 100 }
    })
    if (res.statusCode !== 201) throw new Error(`measurement answered ${res.statusCode}`)
  }
}

interface Stalled {
  socket: net.Socket
  status: number
  head: string
  closed: Promise<number>
}

/**
 * A download whose client reads the first bytes (to learn the status) and
 * then nothing more: the socket stays open and paused.
 */
function stalledDownload (port: number, url: string, token: string): Promise<Stalled> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1')
    socket.setNoDelay(true)
    const closed = new Promise<number>(resolve => socket.once('close', () => resolve(Date.now())))
    socket.once('error', () => {})
    socket.write(`GET ${url} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n\r\n`)
    socket.once('data', (chunk: Buffer) => {
      socket.pause()
      const head = chunk.toString('latin1').split('\r\n\r\n')[0]
      resolve({ socket, status: Number(head.split(' ')[1]), head, closed })
    })
    socket.once('close', () => reject(new Error('closed before any answer')))
  })
}

interface Slow {
  socket: net.Socket
  opened: number
  closed: Promise<number>
}

/** A client that sends its request headers one byte a second and never finishes them. */
function slowloris (port: number): Slow {
  const socket = net.connect(port, '127.0.0.1')
  socket.once('error', () => {})
  const text = 'GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: ' + 'a'.repeat(100)
  let at = 0
  const timer = setInterval(() => {
    if (socket.destroyed) return
    socket.write(text[at % text.length])
    at += 1
  }, 1000)
  const closed = new Promise<number>(resolve => socket.once('close', () => {
    clearInterval(timer)
    resolve(Date.now())
  }))
  return { socket, opened: Date.now(), closed }
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
t.teardown(() => agent.destroy())

/** A GET over a kept-alive connection (or a connection of its own): its status, body and time in milliseconds. */
function timedGet (origin: string, url: string, token?: string, own = false): Promise<{ status: number, body: any, ms: number, headers: http.IncomingHttpHeaders }> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    http.get(`${origin}${url}`, { agent: own ? false : agent, headers: token === undefined ? {} : bearer(token) }, res => {
      const chunks: Buffer[] = []
      res.on('data', chunk => chunks.push(chunk))
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString()
        resolve({ status: res.statusCode ?? 0, body: text === '' ? null : JSON.parse(text), ms: performance.now() - started, headers: res.headers })
      })
      res.on('error', reject)
    }).on('error', reject)
  })
}

function p99 (samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.ceil(sorted.length * 0.99) - 1]
}

async function reads (origin: string, url: string, token: string, count: number): Promise<{ statuses: number[], times: number[] }> {
  const statuses: number[] = []
  const times: number[] = []
  for (let i = 0; i < count; i++) {
    const res = await timedGet(origin, url, token)
    statuses.push(res.status)
    times.push(res.ms)
  }
  return { statuses, times }
}

/**
 * Holds the measurements table locked, so that every export waits on it:
 * how many statements wait, and the release.
 */
async function lockMeasurements (app: App & { db: { sql: any } }): Promise<{ waiting: () => Promise<number>, release: () => Promise<void> }> {
  let release = (): void => {}
  const released = new Promise<void>(resolve => { release = resolve })
  let taken = (): void => {}
  const lockTaken = new Promise<void>(resolve => { taken = resolve })
  const holder = app.db.sql.begin(async (tx: any) => {
    await tx`lock table measurements in access exclusive mode`
    taken()
    await released
  })
  await lockTaken
  return {
    waiting: async () => (await app.db.sql`select count(*)::int as n from pg_locks where relation = 'measurements'::regclass and not granted`)[0].n,
    release: async () => {
      release()
      await holder
    }
  }
}

/** Transactions open on the app's connections to the test database (the test's own connection left out). */
async function openTransactions (app: App & { db: { sql: any } }): Promise<number> {
  const [row] = await app.db.sql`
    select count(*) as n from pg_stat_activity
    where datname = current_database() and pid <> pg_backend_pid() and xact_start is not null
  `
  return row.n
}

async function until (check: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  for (const stop = Date.now() + ms; Date.now() < stop;) {
    if (await check()) return true
    await new Promise(resolve => setTimeout(resolve, 50))
  }
  return false
}

/** Files of a folder this process holds open, those removed from it included. */
function filesUnder (dir: string): string[] {
  const held: string[] = []
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`)
      if (target.startsWith(dir + path.sep)) held.push(path.basename(target))
    } catch {}
  }
  return held
}

t.test('stalled exports and slowloris clients leave another family\'s reads unharmed', async t => {
  const app = await build(t, { env: OPEN })
  const { port, origin } = await listening(app)
  const staller = await register(app)
  await bigFiles(app, await child(app, staller), 4, 8 * MB)
  const reader = await register(app)
  const readerChild = await child(app, reader)
  await someMeasurements(app, reader, readerChild, 30)
  const url = `/api/children/${readerChild}/measurements?limit=100`

  await reads(origin, url, reader.accessToken, 20)
  const quiet = await reads(origin, url, reader.accessToken, 200)
  t.ok(quiet.statuses.every(status => status === 200), 'reads answer 200 on a quiet service')

  const slow = Array.from({ length: 50 }, () => slowloris(port))
  const stalled = await Promise.all(Array.from({ length: 20 }, () =>
    stalledDownload(port, `/api/families/${familyOf(staller)}/export`, staller.accessToken)))
  const started = stalled.filter(download => download.status === 200)
  const refused = stalled.filter(download => download.status === 429)
  t.equal(started.length, 2, 'two exports of one user run at once')
  t.equal(refused.length, 18, 'the others are refused')
  t.ok(refused.every(download => /\r\nretry-after: \d+/i.test(download.head)), 'each refusal says when to retry')

  const loaded = await reads(origin, url, reader.accessToken, 200)
  t.ok(loaded.statuses.every(status => status === 200), 'every read of the other family answers 200 meanwhile')
  const before = p99(quiet.times)
  const during = p99(loaded.times)
  // A floor of 5 ms keeps timer noise on a quiet run from deciding the result.
  t.ok(during < 10 * Math.max(before, 5), `p99 ${during.toFixed(1)} ms under load, ${before.toFixed(1)} ms quiet`)
  t.equal(app.pool.inUse, 0, 'the stalled downloads hold no pooled connection')
  t.equal(await openTransactions(app), 0, 'and no open transaction')
  const health = await timedGet(origin, '/api/health')
  t.equal(health.status, 200, 'health stays ok')

  const closedAt = await Promise.all(slow.map(client => client.closed))
  const lasted = closedAt.map((at, i) => (at - slow[i].opened) / 1000)
  t.ok(lasted.every(seconds => seconds >= 9 && seconds < 20), `slowloris connections are closed after the 10 s header limit (${Math.min(...lasted).toFixed(1)}–${Math.max(...lasted).toFixed(1)} s)`)

  for (const download of stalled) download.socket.destroy()
  t.ok(await until(() => app.pool.inUse === 0, 5000), 'afterwards the pool has every connection back')
  t.ok(await until(async () => await openTransactions(app) === 0, 5000), 'and no transaction is open')
  const again = await Promise.all([0, 1].map(() => stalledDownload(port, `/api/families/${familyOf(staller)}/export`, staller.accessToken)))
  t.same(again.map(download => download.status), [200, 200], 'the export slots are free again')
  for (const download of again) download.socket.destroy()
})

t.test('export limits: two open per user, downloads hold no export slot, and a stalled download is cut', async t => {
  const logs: string[] = []
  const app = await build(t, { logs, env: { ...OPEN, EXPORT_CONCURRENCY: '3', DOWNLOAD_IDLE_TIMEOUT: '2' } })
  const cuts = (): number[] => logs.map(line => JSON.parse(line)).filter(entry => entry.msg === 'export ended: the download made no progress').map(entry => entry.time)
  const { port, origin } = await listening(app)
  const first = await register(app)
  const firstChild = await child(app, first)
  await bigFiles(app, firstChild, 3, 8 * MB)
  // A child's JSON export of many long notes, more than the sockets' buffers hold.
  await app.db.sql`
    insert into measurements (child_id, measured_at, weight_kg, notes)
    select ${firstChild}, date '2022-01-01' + (i % 300), 9, repeat('a note ', 1000)
    from generate_series(1, 3000) i
  `
  const second = await register(app)
  await bigFiles(app, await child(app, second), 3, 8 * MB)

  const family = (pair: Pair): string => `/api/families/${familyOf(pair)}/export`
  const opened = Date.now()
  const a1 = await stalledDownload(port, family(first), first.accessToken)
  const a2 = await stalledDownload(port, `/api/children/${firstChild}/export?format=json`, first.accessToken)
  t.same([a1.status, a2.status], [200, 200], 'a family and a child export of one user run at once')
  t.ok(filesUnder(app.config.uploadDir).length >= 2, 'the running downloads hold files')

  const a3 = await timedGet(origin, family(first), first.accessToken)
  t.equal(a3.status, 429, 'a third export of the same user is refused while two of its downloads are open')
  t.equal(a3.body.code, 'RATE_LIMITED')
  t.same(a3.body.details, {})
  t.match(a3.headers['retry-after'], /^\d+$/, 'with Retry-After')

  const b1 = await stalledDownload(port, family(second), second.accessToken)
  const b2 = await stalledDownload(port, family(second), second.accessToken)
  t.same([b1.status, b2.status], [200, 200], 'another user opens two more: four downloads, and EXPORT_CONCURRENCY is 3, as downloads hold no export slot')

  t.ok(await until(() => cuts().length === 4, 15_000), 'each stalled download is cut by the server')
  const cutAfter = cuts().map(at => (at - opened) / 1000)
  t.ok(cutAfter.every(seconds => seconds >= 2 && seconds < 15), `after its 2 s without progress (${cutAfter.map(s => s.toFixed(1)).join(', ')} s)`)
  for (const download of [a1, a2, b1, b2]) download.socket.resume()
  await Promise.all([a1, a2, b1, b2].map(download => download.closed))
  t.pass('the clients find their connections closed once they read again')
  t.ok(await until(() => filesUnder(app.config.uploadDir).length === 0, 5000), `the files they held are closed ${filesUnder(app.config.uploadDir).join(', ')}`)
  t.equal(app.pool.inUse, 0)

  const res = await new Promise<{ status: number, size: number }>((resolve, reject) => {
    http.get(`${origin}${family(first)}`, { headers: bearer(first.accessToken) }, response => {
      let size = 0
      response.on('data', (chunk: Buffer) => { size += chunk.length })
      response.on('end', () => resolve({ status: response.statusCode ?? 0, size }))
    }).on('error', reject)
  })
  t.equal(res.status, 200, 'once cut, the user may export again')
  t.ok(res.size > 24 * MB, `a download that keeps reading is whole (${(res.size / MB).toFixed(1)} MB)`)
})

t.test('an export slower to read from the database than DOWNLOAD_IDLE_TIMEOUT is not cut: only a client that takes no waiting byte is', async t => {
  const logs: string[] = []
  const app = await build(t, { logs, env: { ...OPEN, DOWNLOAD_IDLE_TIMEOUT: '1' } })
  const { origin } = await listening(app)
  const user = await register(app)
  const childId = await child(app, user)
  await someMeasurements(app, user, childId, 3)
  const lock = await lockMeasurements(app)
  const reading = timedGet(origin, `/api/children/${childId}/export`, user.accessToken, true)
    .catch((error: Error) => ({ status: 0, body: { measurements: [] }, error: error.message }))
  t.ok(await until(async () => await lock.waiting() === 1, 5000), 'the export waits on the locked table')
  // Three times the idle limit, with nothing yet to send.
  await new Promise(resolve => setTimeout(resolve, 3000))
  await lock.release()
  const res = await reading
  t.equal(res.status, 200, 'the export is answered')
  t.equal(res.body.measurements.length, 3, 'whole')
  t.notOk(logs.some(line => line.includes('the download made no progress')), 'and was never taken for a stalled download')
})

t.test('EXPORT_CONCURRENCY bounds the exports being read from the database, in all', async t => {
  const app = await build(t, { env: { ...OPEN, EXPORT_CONCURRENCY: '2' } })
  const { origin } = await listening(app)
  const users = [await register(app), await register(app), await register(app)]
  const children = await Promise.all(users.map(pair => child(app, pair)))
  const url = (i: number): string => `/api/children/${children[i]}/export`

  // Every child's export reads its measurements: while the table is locked, the first two stay being read.
  const lock = await lockMeasurements(app)
  const reading = [0, 1].map(i => timedGet(origin, url(i), users[i].accessToken, true))
  t.ok(await until(async () => await lock.waiting() === 2, 5000), 'two exports wait on the locked table, each in its export slot')
  const third = await timedGet(origin, url(2), users[2].accessToken, true)
  t.equal(third.status, 429, 'a third user\'s export is refused while both slots read')
  t.equal(third.body.code, 'RATE_LIMITED')
  t.match(third.headers['retry-after'], /^\d+$/, 'with Retry-After')

  await lock.release()
  t.same((await Promise.all(reading)).map(res => res.status), [200, 200], 'the two read go through')
  t.equal((await timedGet(origin, url(2), users[2].accessToken, true)).status, 200, 'and then the third')
})

interface SlowReader {
  socket: net.Socket
  status: number
  /** Bytes of the answer read so far, its head included. */
  read: () => number
  closed: Promise<number>
}

/**
 * A download whose client reads what one socket buffer holds every `everyMs`:
 * slow, but never stalled long enough to be cut.
 */
function slowDownload (port: number, url: string, token: string, everyMs: number): Promise<SlowReader> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1')
    socket.once('error', () => {})
    let read = 0
    let timer: NodeJS.Timeout | undefined
    const closed = new Promise<number>(resolve => socket.once('close', () => {
      clearInterval(timer)
      resolve(Date.now())
    }))
    socket.write(`GET ${url} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n\r\n`)
    socket.once('data', (chunk: Buffer) => {
      socket.pause()
      read += chunk.length
      timer = setInterval(() => {
        const more = socket.read() as Buffer | null
        if (more !== null) read += more.length
      }, everyMs)
      const head = chunk.toString('latin1').split('\r\n\r\n')[0]
      resolve({ socket, status: Number(head.split(' ')[1]), read: () => read, closed })
    })
    socket.once('close', () => reject(new Error('closed before any answer')))
  })
}

/** A whole download over a connection of its own: its status and size. */
function wholeDownload (origin: string, url: string, token: string): Promise<{ status: number, size: number }> {
  return new Promise((resolve, reject) => {
    http.get(`${origin}${url}`, { agent: false, headers: bearer(token) }, response => {
      let size = 0
      response.on('data', (chunk: Buffer) => { size += chunk.length })
      response.on('end', () => resolve({ status: response.statusCode ?? 0, size }))
    }).on('error', reject)
  })
}

t.test('slow downloads of two users keep no one else from exporting', async t => {
  const app = await build(t, { env: { ...OPEN, DOWNLOAD_IDLE_TIMEOUT: '2' } })
  const { port, origin } = await listening(app)
  const slow = [await register(app), await register(app)]
  const slowChildren = []
  for (const pair of slow) {
    const id = await child(app, pair)
    await bigFiles(app, id, 3, 8 * MB)
    slowChildren.push(id)
  }
  const other = await register(app)
  await child(app, other)
  const viewer = await register(app)
  await join(app, slow[0], familyOf(slow[0]), viewer, 'viewer')

  const readers = await Promise.all(slow.flatMap(pair => [0, 1].map(() =>
    slowDownload(port, `/api/families/${familyOf(pair)}/export`, pair.accessToken, 100))))
  t.same(readers.map(reader => reader.status), [200, 200, 200, 200], 'each of two users reads two exports, slowly')
  const before = readers.map(reader => reader.read())

  const third = await wholeDownload(origin, `/api/families/${familyOf(other)}/export`, other.accessToken)
  t.equal(third.status, 200, 'a third user\'s family export answers 200 meanwhile')
  t.ok(third.size > 0)
  const viewed = await timedGet(origin, `/api/children/${slowChildren[0]}/export?format=json`, viewer.accessToken, true)
  t.equal(viewed.status, 200, 'and so does a viewer\'s child JSON export')
  t.equal(viewed.body.child.id, slowChildren[0])
  const refused = await timedGet(origin, `/api/families/${familyOf(slow[1])}/export`, slow[1].accessToken, true)
  t.equal(refused.status, 429, 'a slow reader\'s own third export is refused')

  t.ok(await until(() => readers.every((reader, i) => reader.read() > before[i] + MB), 15_000), 'the slow downloads go on, a little at a time')
  const held = readers.map(reader => reader.read())
  t.ok(held.every(bytes => bytes < 24 * MB), `none of them is finished (${held.map(bytes => (bytes / MB).toFixed(1)).join(', ')} MB read)`)
  for (const reader of readers) reader.socket.destroy()
  await Promise.all(readers.map(reader => reader.closed))
  t.ok(await until(() => filesUnder(app.config.uploadDir).length === 0, 5000), 'the files they held are closed')
})

t.test('every connection has the statement timeout, and a statement it cuts is a 503', async t => {
  const defaults = await build(t)
  const [row] = await defaults.sql`show statement_timeout`
  t.equal(row.statement_timeout, '10s', 'ten seconds by default')

  const app = await build(t, {
    env: { DB_STATEMENT_TIMEOUT: '1' },
    routes: app => app.get('/api/test/slow-query', async () => {
      await app.sql`select pg_sleep(3)`
      return { done: true }
    })
  })
  const [limited] = await app.sql`show statement_timeout`
  t.equal(limited.statement_timeout, '1s', 'DB_STATEMENT_TIMEOUT sets it')
  const res = await app.inject({ method: 'GET', url: '/api/test/slow-query' })
  t.equal(res.statusCode, 503)
  t.equal(res.headers['retry-after'], '5')
  t.equal(res.json().code, 'SERVICE_UNAVAILABLE')
})

t.test('the server\'s header, request and keep-alive limits', async t => {
  const app = await build(t, { env: { KEEP_ALIVE_TIMEOUT: '1' } })
  t.equal(app.server.headersTimeout, 10_000, 'headers within 10 s')
  t.equal(app.server.requestTimeout, 60_000, 'a whole request within 60 s')
  t.equal(app.server.keepAliveTimeout, 1_000, 'KEEP_ALIVE_TIMEOUT')
  t.equal((await build(t)).server.keepAliveTimeout, 5_000, 'five seconds by default')

  const { port } = await listening(app)
  const socket = net.connect(port, '127.0.0.1')
  socket.on('error', () => {})
  const answered = new Promise<number>(resolve => socket.once('data', () => resolve(Date.now())))
  const closed = new Promise<number>(resolve => socket.once('close', () => resolve(Date.now())))
  socket.write('GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n')
  socket.resume()
  const idle = (await closed) - (await answered)
  t.ok(idle >= 800 && idle < 4000, `an idle kept-alive connection is closed after about a second (${idle} ms)`)
})

t.test('health says saturated while no pooled connection has been free for 5 s', async t => {
  const app = await build(t)
  const ok = await app.inject({ method: 'GET', url: '/api/health' })
  t.equal(ok.json().database, 'ok')

  let release = (): void => {}
  const released = new Promise<void>(resolve => { release = resolve })
  const holders = Array.from({ length: app.pool.size }, () => app.sql.begin(async tx => {
    await tx`select 1`
    await released
  }))
  t.ok(await until(() => app.pool.inUse === app.pool.size, 5000), 'every connection is taken')
  await new Promise(resolve => setTimeout(resolve, 5200))
  const saturated = await app.inject({ method: 'GET', url: '/api/health' })
  unavailableHealth(t, saturated, 'saturated')

  release()
  await Promise.all(holders)
  const back = await app.inject({ method: 'GET', url: '/api/health' })
  t.equal(back.statusCode, 200, 'it clears once a connection is free')
  t.equal(back.json().database, 'ok')
})

/** The processes of a PostgreSQL cluster: its postmaster and every backend it started. */
function clusterProcesses (dataDir: string): number[] {
  const postmaster = Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0])
  const children = readdirSync('/proc').filter(name => /^\d+$/.test(name)).map(Number).filter(pid => {
    try {
      return Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[1]) === postmaster
    } catch {
      return false
    }
  })
  return [postmaster, ...children]
}

function signal (pids: number[], name: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, name)
    } catch {}
  }
}

async function frozenDatabase (t: Test): Promise<{ url: string, freeze: () => () => void }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'child-health-frozen-'))
  chmodSync(dir, 0o755)
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const quiet = { info: () => {}, debug: () => {}, warn: () => {} }
  const dataDir = path.join(dir, 'postgres')
  const db = await startEmbeddedDatabase(dataDir, quiet)
  let frozen: number[] = []
  t.teardown(async () => {
    signal(frozen, 'SIGCONT')
    await db.stop()
  })
  return {
    url: db.url,
    freeze: () => {
      frozen = clusterProcesses(dataDir)
      signal(frozen, 'SIGSTOP')
      return () => signal(frozen, 'SIGCONT')
    }
  }
}

t.test('a PostgreSQL frozen with SIGSTOP gives 503s within 6 s, and service resumes after SIGCONT', async t => {
  const database = await frozenDatabase(t)
  const app = await buildApp(testConfig(t, database.url, OPEN))
  t.teardown(() => app.close())
  const { origin } = await listening(app)
  const owner = await register(app)
  const childId = await child(app, owner)
  const url = `/api/children/${childId}/measurements`
  // Several connections of the pool are open and idle when the database freezes.
  await Promise.all(Array.from({ length: 4 }, () => timedGet(origin, url, owner.accessToken)))

  const thaw = database.freeze()
  const [health, ...answers] = await Promise.all([
    timedGet(origin, '/api/health', undefined, true),
    ...Array.from({ length: 5 }, () => timedGet(origin, url, owner.accessToken, true))
  ])
  for (const res of answers) {
    t.equal(res.status, 503, `a read answers 503 in ${(res.ms / 1000).toFixed(1)} s`)
    t.ok(res.ms < 6000, 'within 6 s')
    t.equal(res.body.code, 'SERVICE_UNAVAILABLE')
    t.equal(res.headers['retry-after'], '5')
  }
  t.equal(health.status, 503)
  t.equal(health.body.database, 'unreachable', 'health says unreachable')
  t.ok(health.ms < 6000, `health answers in ${(health.ms / 1000).toFixed(1)} s`)
  const write = await app.inject({
    method: 'POST',
    url,
    headers: bearer(owner.accessToken),
    payload: { measuredAt: '2022-01-01', weightKg: 9 }
  })
  t.equal(write.statusCode, 503, 'a write answers 503 too')

  thaw()
  t.ok(await until(async () => (await timedGet(origin, url, owner.accessToken)).status === 200, 15_000), 'reads answer 200 again without a restart')
  t.equal((await timedGet(origin, '/api/health')).body.database, 'ok')
  const list = await timedGet(origin, url, owner.accessToken)
  t.equal(list.body.meta.total, 0, 'the write refused while frozen left nothing behind')
})
