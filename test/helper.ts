import { randomBytes, randomInt } from 'node:crypto'
import { Writable } from 'node:stream'
import type { Test } from 'tap'
import { buildApp, type App } from '../app'
import { loadConfig, type Config } from '../io/config'
import { createSql, type Sql } from '../db/client'
import { freePort } from '../db/embedded'
import { ResponseChecker } from './openapi-check'
import { testState, withDatabase } from './setup/state'
import { tempDir } from './temp-dir'

export { tempDir }

export type { App }

export const TEST_ENV = {
  NODE_ENV: 'test',
  LOG_LEVEL: 'silent',
  JWT_SECRET: 'test-access-secret-0123456789abcdefghijkl',
  JWT_REFRESH_SECRET: 'test-refresh-secret-0123456789abcdefghijk',
  // The lowest cost: a test run hashes thousands of passwords.
  BCRYPT_COST: '4',
  AUTH_RATE_LIMIT_MAX: '100000',
  // The job queue's worker runs in the tests of reminders and webhooks, which turn it on; the others need none.
  JOB_WORKER: 'off',
  // Batches of 500 writes on a machine the test files share: the tests of the limit set it low themselves.
  BATCH_ATOMIC_TIMEOUT_MS: '600000',
  // The run's checked WHO tables, so that no test app downloads them.
  get GROWTH_DATA_DIR (): string { return testState().growthDir }
}

/** The folder of the run's checked WHO growth tables. */
export function growthDir (): string {
  return testState().growthDir
}

/** Settings under which an app has no WHO growth tables: an empty folder, and a download address where nothing listens. */
export async function withoutGrowthTables (t: Test): Promise<{ GROWTH_DATA_DIR: string, GROWTH_DATA_URL: string }> {
  const dir = tempDir(t, 'child-health-no-growth-')
  return { GROWTH_DATA_DIR: dir, GROWTH_DATA_URL: `http://127.0.0.1:${await freePort()}/` }
}

export interface TestDatabase {
  url: string
  name: string
  sql: Sql
}

/**
 * A database of this test's own, cloned from the migrated template and dropped
 * at teardown. `empty` gives a database without any schema instead.
 */
export async function testDatabase (t: Test, { empty = false, timezone }: { empty?: boolean; timezone?: string } = {}): Promise<TestDatabase> {
  const { adminUrl, template } = testState()
  const name = `${template}_${randomBytes(5).toString('hex')}`
  const admin = createSql(adminUrl, { max: 1 })
  try {
    await admin.unsafe(`create database ${name}${empty ? '' : ` template ${template}`}`)
    if (timezone !== undefined) await admin.unsafe(`alter database ${name} set timezone = '${timezone.replace(/'/g, '')}'`)
  } finally {
    await admin.end()
  }
  const url = withDatabase(adminUrl, name)
  const sql = createSql(url, { max: 2 })
  t.teardown(async () => {
    await sql.end({ timeout: 1 })
    const cleanup = createSql(adminUrl, { max: 1 })
    await cleanup.unsafe(`drop database if exists ${name} with (force)`)
    await cleanup.end()
  })
  return { url, name, sql }
}

/** A configuration for tests: the given database, fast bcrypt, files in a temporary directory. */
export function testConfig (t: Test, url: string, env: Record<string, string> = {}): Config {
  const dataDir = tempDir(t, 'child-health-data-')
  return loadConfig({ ...TEST_ENV, DATA_DIR: dataDir, DATABASE_URL: url, ...env })
}

export interface BuildOptions {
  env?: Record<string, string>
  timezone?: string
  /** Routes a test adds to the real app before it starts, to reach the shared mechanisms. */
  routes?: (app: App) => void
  /** Collects every log line. */
  logs?: string[]
  /**
   * A read of a family's changes feed first waits until every transaction
   * begun before it has ended (default true). The feed serves a change only
   * once no older transaction is open, and the test files that run beside
   * this one write on the same server; without the wait, a test that writes
   * and then reads the feed would see what another file's open transaction
   * holds back. A test of that holding back turns it off.
   */
  settleFeed?: boolean
}

/** Waits until every transaction of the server that began before this call has ended. */
export async function transactionsSettled (sql: Sql, ms = 30_000): Promise<void> {
  const [{ xid }] = await sql<{ xid: string }[]>`select pg_current_xact_id()::text as xid`
  for (const stop = Date.now() + ms; Date.now() < stop;) {
    const [{ done }] = await sql<{ done: boolean }[]>`select pg_snapshot_xmin(pg_current_snapshot()) > ${xid}::xid8 as done`
    if (done) return
    await new Promise(resolve => setTimeout(resolve, 20))
  }
  throw new Error(`transactions older than ${xid} were still open after ${ms} ms`)
}

/**
 * Takes a test's database away and gives it back: `away` refuses new
 * connections and ends those open (the service's and the job queue's), `back`
 * takes connections again. Given back at teardown in any case.
 */
export function databaseSwitch (t: Test, name: string): { away: () => Promise<void>, back: () => Promise<void> } {
  const admin = createSql(testState().adminUrl, { max: 1 })
  const allow = async (allowed: boolean): Promise<void> => { await admin.unsafe(`alter database "${name}" allow_connections ${String(allowed)}`) }
  t.teardown(async () => {
    await allow(true)
    await admin.end()
  })
  return {
    away: async () => {
      await allow(false)
      await admin`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${name}`
    },
    back: () => allow(true)
  }
}

const FEED = /^\/api\/families\/[^/]+\/changes(\?|$)/

/** The real app against a database of the test's own; closed at teardown. */
export async function build (t: Test, options: BuildOptions = {}): Promise<App & { db: TestDatabase, checker: ResponseChecker }> {
  const db = await testDatabase(t, { timezone: options.timezone })
  const env = { ...(options.logs !== undefined ? { LOG_LEVEL: 'info' } : {}), ...options.env }
  const config = testConfig(t, db.url, env)
  const logs = options.logs
  const logStream = logs === undefined
    ? undefined
    : new Writable({ write (chunk, _encoding, done) { logs.push(chunk.toString()); done() } })
  const checker = new ResponseChecker()
  const app = await buildApp(config, {
    logStream,
    setup: app => {
      checker.attach(app)
      if (options.settleFeed !== false) {
        app.addHook('onRequest', async request => {
          if (request.method === 'GET' && FEED.test(request.url)) await transactionsSettled(db.sql)
        })
      }
    }
  })
  options.routes?.(app)
  t.teardown(async () => {
    await app.close()
    if (checker.mismatches.length > 0) {
      throw new Error(`responses that do not match the OpenAPI document:\n${[...new Set(checker.mismatches)].join('\n')}`)
    }
  })
  await app.ready()
  return Object.assign(app, { db, checker })
}

export interface Pair {
  accessToken: string
  refreshToken: string
  tokenType: string
  expiresIn: number
  refreshExpiresIn: number
  user: { id: number, email: string, name: string, role: string, createdAt: string }
}

export const PASSWORD = 'correct horse battery'

export function bearer (token: string): { authorization: string } {
  return { authorization: `Bearer ${token}` }
}

let counter = 0

/** Registers a user through the real route and answers the token pair. */
export async function register (app: App, body: Record<string, unknown> = {}): Promise<Pair> {
  counter += 1
  const res = await app.inject({
    method: 'POST',
    url: '/api/auth/register',
    payload: { email: `user${counter}-${randomInt(1000000)}@example.org`, password: PASSWORD, name: `User ${counter}`, ...body }
  })
  if (res.statusCode !== 201) throw new Error(`register answered ${res.statusCode}: ${res.body}`)
  return res.json()
}

/** Logs in through the real route. */
export async function login (app: App, email: string, password = PASSWORD): Promise<Pair> {
  const res = await app.inject({ method: 'POST', url: '/api/auth/login', payload: { email, password } })
  if (res.statusCode !== 200) throw new Error(`login answered ${res.statusCode}: ${res.body}`)
  return res.json()
}

/** A call through the real app, as a signed-in user or (null) as nobody. */
export function call (app: App, pair: Pair | null, method: string, url: string, payload?: unknown, headers: Record<string, string> = {}) {
  return app.inject({
    method: method as 'GET',
    url,
    headers: { ...(pair === null ? {} : bearer(pair.accessToken)), ...headers },
    ...(payload === undefined ? {} : { payload: payload as object })
  })
}

/** A create through the real app that must answer 201: its body. */
export async function made (app: App, pair: Pair, url: string, payload: unknown): Promise<any> {
  const res = await call(app, pair, 'POST', url, payload)
  if (res.statusCode !== 201) throw new Error(`POST ${url} answered ${res.statusCode}: ${res.body}`)
  return res.json()
}

/** A read through the real app that must answer 200: its body. */
export async function got (app: App, pair: Pair, url: string): Promise<any> {
  const res = await call(app, pair, 'GET', url)
  if (res.statusCode !== 200) throw new Error(`GET ${url} answered ${res.statusCode}: ${res.body}`)
  return res.json()
}

/** A family's changes after a cursor (one page of up to 1,000), and the cursor to go on from. */
export async function changesSince (app: App, pair: Pair, familyId: number, since: string | null): Promise<{ data: any[], next: string }> {
  const res = await got(app, pair, `/api/families/${familyId}/changes?limit=1000${since === null ? '' : `&since=${since}`}`)
  return { data: res.data, next: res.meta.nextCursor }
}

/** The first family in a user's access token. */
export function familyOf (pair: Pair): number {
  return JSON.parse(Buffer.from(pair.accessToken.split('.')[1], 'base64url').toString()).families[0]
}

/** The owner invites a user to a family in a role, and the user accepts, through the real routes. */
export async function join (app: App, owner: Pair, familyId: number, user: Pair, role: string) {
  const invite = await call(app, owner, 'POST', `/api/families/${familyId}/invites`, { email: user.user.email, role })
  if (invite.statusCode !== 201) throw new Error(`invite answered ${invite.statusCode}: ${invite.body}`)
  const accepted = await call(app, user, 'POST', '/api/invites/accept', { token: invite.json().token })
  if (accepted.statusCode !== 200) throw new Error(`accept answered ${accepted.statusCode}: ${accepted.body}`)
  return accepted.json()
}

const signedIn = new WeakMap<App, Promise<Pair>>()

/** The bearer header of a user registered once per app, for routes that need any signed-in user. */
export async function authHeaders (app: App): Promise<{ authorization: string }> {
  let pair = signedIn.get(app)
  if (pair === undefined) {
    pair = register(app)
    signedIn.set(app, pair)
  }
  return bearer((await pair).accessToken)
}

/**
 * Users for the owner's family, registered in the order given: each joins it
 * in its role, and one given null joins no family but its own (a stranger).
 */
export async function members<R extends string> (app: App, owner: Pair, roles: Record<R, string | null>): Promise<Record<R, Pair>> {
  const users = {} as Record<R, Pair>
  for (const name of Object.keys(roles) as R[]) users[name] = await register(app)
  for (const name of Object.keys(roles) as R[]) {
    const role = roles[name]
    if (role !== null) await join(app, owner, familyOf(owner), users[name], role)
  }
  return users
}

/** An owner registered first, their family, and the users of `members` in it. */
export async function household<R extends string> (app: App, roles: Record<R, string | null>): Promise<{ owner: Pair, familyId: number } & Record<R, Pair>> {
  const owner = await register(app)
  return { owner, familyId: familyOf(owner), ...await members(app, owner, roles) }
}

/** Reads an event stream's body a block (an event or a comment) at a time until it ends; rejects once it is aborted. */
export async function readBlocks (body: ReadableStream<Uint8Array>, onBlock: (block: string) => void): Promise<void> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let pending = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) return
    pending += decoder.decode(value, { stream: true })
    let end: number
    while ((end = pending.indexOf('\n\n')) >= 0) {
      onBlock(pending.slice(0, end))
      pending = pending.slice(end + 2)
    }
  }
}

/** A body that must be refused: what it is, the body, the path its issue names, and a pattern for the issue's message. */
export type Refusal = [what: string, payload: unknown, path: string, message?: RegExp]

/** Each body POSTed to `url` answers 400 with an issue at its path (and `code`, unless null). */
export async function refusesEach (t: Test, app: App, pair: Pair, url: string, cases: Refusal[], { code = 'VALIDATION_ERROR' as string | null } = {}): Promise<void> {
  for (const [what, payload, path, message] of cases) {
    const res = await call(app, pair, 'POST', url, payload)
    t.equal(res.statusCode, 400, `${what}: ${res.body}`)
    if (code !== null) t.equal(res.json().code, code)
    const issue = res.json().details.issues.find((item: { path: string }) => item.path === path)
    t.ok(issue, `${what}: names ${path}`)
    if (message !== undefined) t.match(issue?.message, message)
  }
}

/** A health answer of 503 with Retry-After, for the given state of the database: its body. */
export function unavailableHealth (t: Test, res: { statusCode: number, headers: Record<string, unknown>, json: () => any }, database: string): any {
  t.equal(res.statusCode, 503)
  t.equal(res.headers['retry-after'], '5')
  const body = res.json()
  t.equal(body.status, 'unavailable')
  t.equal(body.database, database)
  t.equal(body.code, 'SERVICE_UNAVAILABLE')
  return body
}
