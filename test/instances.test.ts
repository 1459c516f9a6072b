import t, { type Test } from 'tap'
import { createSigner } from 'fast-jwt'
import { existsSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { Writable } from 'node:stream'
import sharp from 'sharp'
import { buildApp } from '../app'
import { createSql } from '../db/client'
import { LOCKS, whileLocked } from '../db/locks'
import { keyId } from '../lib/keyring'
import { bearer, call, growthDir, login, PASSWORD, register, tempDir, testConfig, testDatabase, TEST_ENV, type App, type TestDatabase } from './helper'
import { file, form } from './multipart'

const OPEN = { REGISTRATION: 'open' }

/** An instance of the real app on a database shared with others; closed at teardown. */
async function instance (t: Test, db: TestDatabase, env: Record<string, string> = {}, logs?: string[]): Promise<App> {
  const logStream = logs === undefined
    ? undefined
    : new Writable({ write (chunk, _encoding, done) { logs.push(chunk.toString()); done() } })
  const app = await buildApp(testConfig(t, db.url, { ...OPEN, ...(logs === undefined ? {} : { LOG_LEVEL: 'info' }), ...env }), { logStream })
  t.teardown(() => app.close())
  await app.ready()
  return app
}

/** Two instances on one database and one file folder. */
async function pair (t: Test, env: Record<string, string> = {}): Promise<{ a: App, b: App, db: TestDatabase, files: string }> {
  const db = await testDatabase(t)
  const files = tempDir(t, 'child-health-shared-')
  const shared = { UPLOAD_DIR: path.join(files, 'uploads'), AVATAR_DIR: path.join(files, 'avatars'), ...env }
  const [a, b] = await Promise.all([instance(t, db, shared), instance(t, db, shared)])
  return { a, b, db, files }
}

t.test('requests alternating between two instances see one service', async t => {
  const { a, b } = await pair(t)
  const owner = await register(a, { email: 'owner@example.org', name: 'Owner' })
  const member = await register(b, { email: 'member@example.org', name: 'Member' })
  const familyId = (await b.inject({ method: 'GET', url: '/api/me', headers: bearer(owner.accessToken) })).json().families[0].id
  const invite = await call(b, owner, 'POST', `/api/families/${familyId}/invites`, { email: 'member@example.org', role: 'member' })
  t.equal((await call(a, member, 'POST', '/api/invites/accept', { token: invite.json().token })).statusCode, 200, 'an invite made on one is accepted on the other')
  const child = await call(a, owner, 'POST', '/api/children', { name: 'Noa', dateOfBirth: '2021-06-01', sex: 'female', familyId })

  // A write on one is read on the other at once, its ETag included.
  const list = `/api/children/${child.json().id}/measurements`
  const before = await b.inject({ method: 'GET', url: list, headers: bearer(member.accessToken) })
  t.equal((await a.inject({ method: 'GET', url: list, headers: bearer(member.accessToken) })).headers.etag, before.headers.etag, 'an ETag is the same on every instance')
  await call(a, owner, 'POST', list, { measuredAt: '2022-01-01', weightKg: 8 })
  const after = await b.inject({ method: 'GET', url: list, headers: { ...bearer(member.accessToken), 'if-none-match': before.headers.etag as string } })
  t.equal(after.statusCode, 200, 'a write on one changes the ETag on the other')
  t.equal(after.json().meta.total, 1)

  // An upload through one is served by the other.
  const png = await sharp({ create: { width: 4, height: 4, channels: 3, background: '#333' } }).png().toBuffer()
  const upload = form([file(png, 'x.png', 'image/png')])
  const stored = await call(a, owner, 'POST', `/api/children/${child.json().id}/attachments`, upload.payload, upload.headers)
  const served = await b.inject({ method: 'GET', url: stored.json().url })
  t.equal(served.statusCode, 200, 'an upload through one is served by the other')
  t.same(served.rawPayload, png)

  // Revocations take effect on the next request, whatever instance gets it.
  const second = await login(b, 'member@example.org')
  t.equal((await a.inject({ method: 'DELETE', url: `/api/families/${familyId}/members/${member.user.id}`, headers: bearer(owner.accessToken) })).statusCode, 204)
  t.equal((await b.inject({ method: 'GET', url: list, headers: bearer(second.accessToken) })).statusCode, 403, 'a member removed on one is refused on the other')

  const third = await login(a, 'owner@example.org')
  t.equal((await call(b, third, 'POST', '/api/auth/logout', {})).statusCode, 204)
  t.equal((await a.inject({ method: 'GET', url: '/api/me', headers: bearer(third.accessToken) })).statusCode, 401, 'a logout on one is refused on the other')

  t.equal((await call(a, owner, 'POST', '/api/me/password', { currentPassword: PASSWORD, newPassword: 'another fine password' })).statusCode, 204)
  t.equal((await b.inject({ method: 'GET', url: '/api/me', headers: bearer(second.accessToken) })).statusCode, 200, 'another user\'s session goes on')
  const others = await login(b, 'owner@example.org', 'another fine password')
  t.equal((await a.inject({ method: 'GET', url: '/api/me', headers: bearer(others.accessToken) })).statusCode, 200)
  t.equal((await call(b, owner, 'POST', '/api/me/password', { currentPassword: 'another fine password', newPassword: 'a third fine password' })).statusCode, 204)
  t.equal((await a.inject({ method: 'GET', url: '/api/me', headers: bearer(others.accessToken) })).statusCode, 401, 'a password change on one ends the other sessions on the other')
})

t.test('a personal access token deleted, or its member removed, on one instance is refused on the other', async t => {
  const { a, b } = await pair(t)
  const owner = await register(a, { email: 'owner@example.org' })
  const member = await register(a, { email: 'member@example.org' })
  const familyId = (await a.inject({ method: 'GET', url: '/api/me', headers: bearer(owner.accessToken) })).json().families[0].id
  const invite = await call(a, owner, 'POST', `/api/families/${familyId}/invites`, { email: 'member@example.org', role: 'member' })
  await call(a, member, 'POST', '/api/invites/accept', { token: invite.json().token })
  const child = (await call(a, owner, 'POST', '/api/children', { name: 'Noa', dateOfBirth: '2021-06-01', sex: 'female', familyId })).json().id
  const made = async (pair: typeof owner) => (await call(a, pair, 'POST', '/api/me/tokens', { name: 'ha', scope: 'write', familyId })).json()
  const own = await made(owner)
  const members = await made(member)
  // A read decided in the answer's statement, and one decided before its handler.
  const reads = [`/api/children/${child}/measurements`, `/api/families/${familyId}`]
  for (const url of reads) {
    t.equal((await b.inject({ method: 'GET', url, headers: bearer(own.token) })).statusCode, 200, `the token works on the other instance: ${url}`)
    t.equal((await b.inject({ method: 'GET', url, headers: bearer(members.token) })).statusCode, 200)
  }
  t.equal((await b.inject({ method: 'POST', url: `/api/children/${child}/measurements`, headers: bearer(own.token), payload: { measuredAt: '2022-01-01', weightKg: 8 } })).statusCode, 201)

  t.equal((await call(a, owner, 'DELETE', `/api/me/tokens/${own.id}`)).statusCode, 204)
  for (const app of [b, a]) {
    for (const url of reads) t.equal((await app.inject({ method: 'GET', url, headers: bearer(own.token) })).statusCode, 401, `a token deleted on one is refused: ${url}`)
    const write = await app.inject({ method: 'POST', url: `/api/children/${child}/measurements`, headers: bearer(own.token), payload: { measuredAt: '2022-01-02', weightKg: 8 } })
    t.equal(write.statusCode, 401, 'its write too')
  }

  t.equal((await call(a, owner, 'DELETE', `/api/families/${familyId}/members/${member.user.id}`)).statusCode, 204)
  for (const url of reads) t.equal((await b.inject({ method: 'GET', url, headers: bearer(members.token) })).statusCode, 403, `a member removed on one: the token is refused on the other: ${url}`)
  const [{ n }] = await a.sql`select count(*)::int as n from measurements`
  t.equal(n, 1, 'only the write of the live token was made')
})

t.test('two instances starting at once on an empty database both come up, each migration applied once', async t => {
  const db = await testDatabase(t, { empty: true })
  const [a, b] = await Promise.all([instance(t, db), instance(t, db)])
  t.equal((await a.inject({ method: 'GET', url: '/api/health' })).statusCode, 200)
  t.equal((await b.inject({ method: 'GET', url: '/api/health' })).statusCode, 200)
  const rows = await db.sql<{ name: string, n: number }[]>`select name, count(*)::int as n from migrations group by name order by name`
  t.ok(rows.length >= 2, `${rows.length} migrations`)
  t.ok(rows.every(row => row.n === 1), 'each recorded once')
})

/** A database and file folders where a file without a row, an hour old, waits for the sweep. */
async function withOrphan (t: Test): Promise<{ db: TestDatabase, env: Record<string, string>, orphan: string }> {
  const db = await testDatabase(t)
  const files = tempDir(t, 'child-health-shared-')
  const uploads = path.join(files, 'uploads')
  const env = { UPLOAD_DIR: uploads, AVATAR_DIR: path.join(files, 'avatars') }
  // The first instance makes the folders.
  await (await instance(t, db, env)).close()
  const orphan = path.join(uploads, `${'ef'.repeat(16)}.png`)
  writeFileSync(orphan, 'x')
  const anHourAgo = new Date(Date.now() - 61 * 60 * 1000)
  utimesSync(orphan, anHourAgo, anHourAgo)
  return { db, env, orphan }
}

t.test('the orphan sweep runs on one instance at a time', async t => {
  const { db, env, orphan } = await withOrphan(t)

  const holder = await db.sql.reserve()
  t.teardown(() => holder.release())
  await holder`select pg_advisory_lock(${LOCKS.orphanSweep})`
  const logs: string[] = []
  const busy = await instance(t, db, env, logs)
  await busy.close()
  t.ok(existsSync(orphan), 'while another instance sweeps, this one leaves the files alone')
  t.ok(logs.some(line => line.includes('another instance is sweeping orphaned files')), 'and says so')

  await holder`select pg_advisory_unlock(${LOCKS.orphanSweep})`
  const free = await instance(t, db, env)
  await free.close()
  t.notOk(existsSync(orphan), 'once it is free, an instance sweeps')
})

t.test('a close while the sweep waits on the database ends without a warning; its files stay for the next start', async t => {
  const { db, env, orphan } = await withOrphan(t)

  // The sweep's question about the attachments waits behind this lock.
  const holder = await db.sql.reserve()
  t.teardown(() => holder.release())
  await holder.unsafe('begin')
  await holder`lock table attachments in access exclusive mode`
  const logs: string[] = []
  const held = await instance(t, db, env, logs)
  let waiting = false
  for (let tries = 0; tries < 200 && !waiting; tries++) {
    // Read apart from the holder, whose transaction sees one snapshot of the activity.
    const [row] = await db.sql`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock' and query like '%stored_name%'`
    waiting = row.n > 0
    if (!waiting) await new Promise(resolve => setTimeout(resolve, 50))
  }
  t.ok(waiting, 'the sweep waits on the locked table')

  await t.resolves(held.close(), 'the close ends, with the sweep still waiting')
  t.same(await holder`select 1 as still`, [{ still: 1 }], 'while the lock is still held')
  t.ok(existsSync(orphan), 'the file the sweep did not reach stays')
  const lines = logs.map(line => JSON.parse(line))
  t.ok(lines.some(line => line.level === 30 && /stopped with the service/.test(line.msg)), 'the stopped sweep is noted')
  t.notOk(lines.some(line => line.level >= 40), 'and nothing is logged as going wrong')

  await holder.unsafe('rollback')
  await (await instance(t, db, env)).close()
  t.notOk(existsSync(orphan), 'the next start sweeps it')
})

t.test('a lock\'s holder that gets no connection fails in time; the connection that comes later goes back to the pool', async t => {
  const db = await testDatabase(t)
  const sql = createSql(db.url, { max: 1 })
  t.teardown(() => sql.end({ timeout: 1 }))
  // The pool's only connection is taken: a reservation waits for it.
  const taken = await sql.reserve()
  let ran = false
  await t.rejects(
    whileLocked(sql, LOCKS.orphanSweep, async () => { ran = true }, { reserveMs: 100 }),
    /no database connection came within 100 ms/
  )
  t.notOk(ran, 'the work does not run')
  taken.release()
  const again = await whileLocked(sql, LOCKS.orphanSweep, async () => 'swept', { wait: false })
  t.same(again, { ran: true, result: 'swept' }, 'the only connection of the pool serves the next holder')
})

t.test('the growth tables are downloaded by one instance at a time; the next finds them', async t => {
  const db = await testDatabase(t)
  const tables = growthDir()
  const requests: string[] = []
  const mirror = http.createServer((request, response) => {
    requests.push(request.url ?? '')
    const name = path.basename(request.url ?? '')
    const local = path.join(tables, name)
    if (!existsSync(local)) {
      response.writeHead(404).end()
      return
    }
    response.writeHead(200).end(readFileSync(local))
  })
  await new Promise<void>(resolve => mirror.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>(resolve => mirror.close(() => resolve())))
  const growth = path.join(tempDir(t, 'child-health-growth-'), 'tables')
  const env = { GROWTH_DATA_DIR: growth, GROWTH_DATA_URL: `http://127.0.0.1:${(mirror.address() as AddressInfo).port}/` }

  const holder = await db.sql.reserve()
  t.teardown(() => holder.release())
  await holder`select pg_advisory_lock(${LOCKS.growthDownload})`
  const [a, b] = await Promise.all([instance(t, db, env), instance(t, db, env)])
  await new Promise(resolve => setTimeout(resolve, 500))
  t.same(requests, [], 'nothing is downloaded while another instance downloads')
  await holder`select pg_advisory_unlock(${LOCKS.growthDownload})`
  await Promise.all([a.growth.loading, b.growth.loading])
  t.ok(a.growth.ready && b.growth.ready, 'both have the tables')
  t.equal(requests.length, 9, 'the nine tables were fetched once, by one of them')
  t.equal(readdirSync(growth).filter(name => name.endsWith('.txt')).length, 9)
})

t.test('secret rotation: tokens of the previous secret are accepted, of an unknown one refused', async t => {
  const OLD = { JWT_SECRET: TEST_ENV.JWT_SECRET, JWT_REFRESH_SECRET: TEST_ENV.JWT_REFRESH_SECRET }
  const NEW = { JWT_SECRET: 'the new access secret, 0123456789abcdef', JWT_REFRESH_SECRET: 'the new refresh secret, 0123456789abcdef' }
  const db = await testDatabase(t)
  const before = await instance(t, db, OLD)
  const pair = await register(before, { email: 'rotating@example.org', name: 'Rota' })
  const header = JSON.parse(Buffer.from(pair.accessToken.split('.')[0], 'base64url').toString())
  t.same(header, { alg: 'HS256', typ: 'JWT', kid: keyId(OLD.JWT_SECRET) }, 'a token names its secret in kid')

  const rotated = await instance(t, db, { ...NEW, JWT_SECRET_PREVIOUS: OLD.JWT_SECRET, JWT_REFRESH_SECRET_PREVIOUS: OLD.JWT_REFRESH_SECRET })
  t.equal((await rotated.inject({ method: 'GET', url: '/api/me', headers: bearer(pair.accessToken) })).statusCode, 200, 'an access token of the previous secret is accepted')
  const refreshed = await call(rotated, null, 'POST', '/api/auth/refresh', { refreshToken: pair.refreshToken })
  t.equal(refreshed.statusCode, 200, 'so is a refresh token')
  const fresh = refreshed.json()
  t.equal(JSON.parse(Buffer.from(fresh.accessToken.split('.')[0], 'base64url').toString()).kid, keyId(NEW.JWT_SECRET), 'new tokens are signed with the new secret')
  t.equal((await rotated.inject({ method: 'GET', url: '/api/me', headers: bearer(fresh.accessToken) })).statusCode, 200)
  t.equal((await before.inject({ method: 'GET', url: '/api/me', headers: bearer(fresh.accessToken) })).statusCode, 401, 'an instance without the new secret refuses them')

  const claims = JSON.parse(Buffer.from(pair.accessToken.split('.')[1], 'base64url').toString())
  const stranger = createSigner({ key: 'a secret nobody configured, 0123456789', algorithm: 'HS256', expiresIn: 60000, kid: keyId('a secret nobody configured, 0123456789') })(claims)
  const unknown = await rotated.inject({ method: 'GET', url: '/api/me', headers: bearer(stranger) })
  t.equal(unknown.statusCode, 401, 'a token of an unknown secret is refused')
  t.equal(unknown.json().code, 'UNAUTHORIZED')
  const forged = createSigner({ key: 'a secret nobody configured, 0123456789', algorithm: 'HS256', expiresIn: 60000, kid: keyId(OLD.JWT_SECRET) })(claims)
  t.equal((await rotated.inject({ method: 'GET', url: '/api/me', headers: bearer(forged) })).statusCode, 401, 'naming a known kid does not help a wrong signature')
  const bare = createSigner({ key: OLD.JWT_SECRET, algorithm: 'HS256', expiresIn: 60000 })(claims)
  t.equal((await rotated.inject({ method: 'GET', url: '/api/me', headers: bearer(bare) })).statusCode, 200, 'a token from before kids is tried against both secrets')

  const done = await instance(t, db, NEW)
  t.equal((await done.inject({ method: 'GET', url: '/api/me', headers: bearer(pair.accessToken) })).statusCode, 401, 'once the previous secret is dropped, its tokens are refused')
})
