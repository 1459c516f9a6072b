import t, { type Test } from 'tap'
import path from 'node:path'
import { buildApp } from '../app'
import { POOL_SIZE } from '../db/client'
import { call, login, register, tempDir, testConfig, testDatabase, type App, type Pair, type TestDatabase } from './helper'

/**
 * The cache of answers: kept by URL and ETag, served only after the session,
 * the scope and the current ETag were read from the database.
 */

async function instance (t: Test, db: TestDatabase, env: Record<string, string> = {}): Promise<App> {
  const app = await buildApp(testConfig(t, db.url, { REGISTRATION: 'open', ...env }))
  t.teardown(() => app.close())
  await app.ready()
  return app
}

async function family (app: App, name: string) {
  const pair = await register(app, { email: `${name}@example.org`, name })
  const child = (await call(app, pair, 'POST', '/api/children', { name: `${name} junior`, dateOfBirth: '2020-05-05', sex: 'other' })).json()
  await call(app, pair, 'POST', `/api/children/${child.id}/measurements`, { measuredAt: '2021-05-05', weightKg: 11 })
  return { pair, childId: child.id as number, email: `${name}@example.org` }
}

t.test('reads are answered from the cache while their ETag is current, and never once it moved', async t => {
  const db = await testDatabase(t)
  const files = tempDir(t, 'child-health-shared-')
  const shared = { UPLOAD_DIR: path.join(files, 'uploads'), AVATAR_DIR: path.join(files, 'avatars') }
  const [a, b] = await Promise.all([instance(t, db, shared), instance(t, db, shared)])
  const ann = await family(a, 'ann')
  const list = `/api/children/${ann.childId}/measurements`

  const first = await call(b, ann.pair, 'GET', list)
  const before = b.responses.stats()
  const again = await call(b, ann.pair, 'GET', list)
  t.equal(b.responses.stats().hits, before.hits + 1, 'the second read is a hit')
  t.equal(again.body, first.body, 'with the same answer')
  t.equal(again.headers.etag, first.headers.etag)
  t.match(again.headers['content-type'], /application\/json/)

  const created = await call(a, ann.pair, 'POST', list, { measuredAt: '2021-06-06', weightKg: 12 })
  const after = await call(b, ann.pair, 'GET', list)
  t.equal(after.json().meta.total, 2, 'a write through one instance is read through the other at once')
  t.not(after.headers.etag, first.headers.etag)

  const item = `/api/measurements/${created.json().id}`
  t.equal((await call(b, ann.pair, 'GET', item)).json().weightKg, 12)
  const replaced = await call(b, ann.pair, 'PUT', item, { measuredAt: '2021-06-06', weightKg: 12.5 })
  t.equal(replaced.statusCode, 200, 'a PUT of a cached item is a write, not the cached read')
  t.equal(replaced.json().weightKg, 12.5)
  t.equal((await call(a, ann.pair, 'GET', item)).json().weightKg, 12.5)
  t.equal((await call(b, ann.pair, 'GET', item)).json().version, 2, 'and the next read shows it on both')

  const growth = `/api/children/${ann.childId}/growth`
  const scores = await call(b, ann.pair, 'GET', growth)
  t.equal((await call(b, ann.pair, 'GET', growth)).body, scores.body, 'growth is kept too')
  await call(a, ann.pair, 'DELETE', item)
  t.equal((await call(b, ann.pair, 'GET', growth)).json().points.length, 1, 'until a change of the child')
})

t.test('a revoked session is refused even when the answer is kept, and two families\' answers never cross', async t => {
  const db = await testDatabase(t)
  const app = await instance(t, db)
  const ann = await family(app, 'ann')
  const bob = await family(app, 'bob')
  const annList = `/api/children/${ann.childId}/measurements`
  const bobList = `/api/children/${bob.childId}/measurements`
  const annAnswer = (await call(app, ann.pair, 'GET', annList)).body
  const bobAnswer = (await call(app, bob.pair, 'GET', bobList)).body
  t.not(annAnswer, bobAnswer)
  t.equal((await call(app, bob.pair, 'GET', annList)).statusCode, 403, 'another family\'s kept answer: 403')
  t.equal((await call(app, ann.pair, 'GET', annList)).body, annAnswer)
  t.equal((await call(app, bob.pair, 'GET', bobList)).body, bobAnswer, 'each family gets its own')

  const session = await login(app, ann.email)
  t.equal((await call(app, session, 'GET', annList)).statusCode, 200)
  t.equal((await call(app, session, 'POST', '/api/auth/logout', {})).statusCode, 204)
  const refused = await call(app, session, 'GET', annList)
  t.equal(refused.statusCode, 401, 'a logged-out session is refused although its answer is kept')
  t.notMatch(refused.body, /weightKg/, 'and nothing of it leaks')
})

t.test('the cache stays under RESPONSE_CACHE_MB, least recently used out, and 0 turns it off', async t => {
  const db = await testDatabase(t)
  const small = await instance(t, db, { RESPONSE_CACHE_MB: '1' })
  const ann = await family(small, 'ann')
  const notes = 'n'.repeat(9000)
  for (let i = 0; i < 10; i += 1) {
    await call(small, ann.pair, 'POST', `/api/children/${ann.childId}/measurements`, { measuredAt: `2021-07-${String(i + 1).padStart(2, '0')}`, heightCm: 70, notes })
  }
  for (let limit = 1; limit <= 60; limit += 1) await call(small, ann.pair, 'GET', `/api/children/${ann.childId}/measurements?limit=${limit}`)
  const stats = small.responses.stats()
  t.ok(stats.bytes <= 1024 * 1024, `the cache holds ${stats.bytes} bytes, at most 1 MiB`)
  t.ok(stats.entries < 60, `${stats.entries} answers kept of 60: the oldest went`)
  const last = await call(small, ann.pair, 'GET', `/api/children/${ann.childId}/measurements?limit=60`)
  t.equal(last.statusCode, 200)

  const off = await instance(t, db, { RESPONSE_CACHE_MB: '0' })
  await call(off, ann.pair, 'GET', `/api/children/${ann.childId}/measurements`)
  await call(off, ann.pair, 'GET', `/api/children/${ann.childId}/measurements`)
  t.same({ ...off.responses.stats(), misses: 0 }, { maxBytes: 0, bytes: 0, entries: 0, hits: 0, misses: 0 }, 'RESPONSE_CACHE_MB=0 keeps nothing')
})

t.test('a list read decides alike whether an answer is held by the client, by the cache, by both or by none', async t => {
  const db = await testDatabase(t)
  const cached = await instance(t, db)
  const bare = await instance(t, db, { RESPONSE_CACHE_MB: '0' })
  const ann = await family(cached, 'ann')
  const bob = await family(cached, 'bob')
  const list = `/api/children/${ann.childId}/measurements`
  const read = (app: App, pair: Pair, etag?: string) =>
    call(app, pair, 'GET', list, undefined, etag === undefined ? {} : { 'if-none-match': etag })

  const first = await read(bare, ann.pair)
  t.equal(first.statusCode, 200)
  t.match(first.headers.etag, /^"[0-9a-f]+\.\d+\.[\w-]{22}"$/, 'the ETag names the clock and the URL')
  t.equal((await read(bare, ann.pair, first.headers.etag as string)).statusCode, 304, 'the client\'s ETag, nothing kept: 304')
  t.equal((await read(cached, ann.pair, first.headers.etag as string)).statusCode, 304, 'the same ETag on another instance: 304')
  const other = `"${(first.headers.etag as string).slice(1, -1).replace(/\.[\w-]+$/, '')}.${'x'.repeat(22)}"`
  t.equal((await read(bare, ann.pair, other)).statusCode, 200, 'the same clock with another URL\'s part is not this answer')

  for (const [app, label] of [[bare, 'nothing kept'], [cached, 'an answer kept']] as const) {
    await read(app, ann.pair)
    await call(cached, ann.pair, 'POST', list, { measuredAt: '2021-08-08', weightKg: 13 })
    const fresh = await read(app, ann.pair, first.headers.etag as string)
    t.equal(fresh.statusCode, 200, `${label}, a client's ETag of before a write: 200`)
    t.equal(fresh.json().meta.total, (await read(bare, ann.pair)).json().meta.total, 'with the answer of now')
    t.not(fresh.headers.etag, first.headers.etag)
    t.equal((await read(app, ann.pair, fresh.headers.etag as string)).statusCode, 304, 'whose ETag is then current')

    const stranger = await read(app, bob.pair, fresh.headers.etag as string)
    t.equal(stranger.statusCode, 403, `${label}, another family with the current ETag: 403, not 304`)
    t.notMatch(stranger.body, /weightKg/)
    const missing = await call(app, ann.pair, 'GET', '/api/children/999999/measurements', undefined, { 'if-none-match': fresh.headers.etag as string })
    t.equal(missing.statusCode, 404, 'a child that does not exist: 404')
  }

  const session = await login(cached, ann.email)
  const current = await read(cached, session)
  await call(cached, session, 'POST', '/api/auth/logout', {})
  for (const app of [cached, bare]) {
    t.equal((await read(app, session, current.headers.etag as string)).statusCode, 401, 'a logged-out session with the current ETag: 401, not 304')
    t.equal((await read(app, session)).statusCode, 401, 'and without: 401')
  }

  // An account disabled while its session is still active.
  const active = await login(cached, ann.email)
  const etag = (await read(bare, active)).headers.etag as string
  await cached.sql`update users set disabled = true where id = ${ann.pair.user.id}`
  for (const app of [cached, bare]) {
    for (const [answer, label] of [[await read(app, active, etag), 'with the current ETag'], [await read(app, active), 'without']] as const) {
      t.equal(answer.statusCode, 403, `a disabled account ${label}: 403, not 304`)
      t.equal(answer.json().code, 'ACCOUNT_DISABLED')
    }
  }
  await cached.sql`update users set disabled = false where id = ${ann.pair.user.id}`
  t.equal((await read(bare, active)).statusCode, 200, 'enabled again')
})

t.test('a kept answer is served while every connection of the request pool is held, with the session still read at each request', async t => {
  const db = await testDatabase(t)
  const app = await instance(t, db)
  const ann = await family(app, 'held')
  const list = `/api/children/${ann.childId}/measurements`
  const first = await call(app, ann.pair, 'GET', list)
  t.equal(first.statusCode, 200)

  const held = await Promise.all(Array.from({ length: POOL_SIZE }, () => app.sql.reserve()))
  t.teardown(() => { for (const connection of held) connection.release() })
  const inTime = <T>(answer: Promise<T>): Promise<T | 'waited'> =>
    Promise.race([answer, new Promise<'waited'>(resolve => setTimeout(() => resolve('waited'), 5000))])

  const kept = await inTime(call(app, ann.pair, 'GET', list))
  t.not(kept, 'waited', 'the read does not wait for the request pool')
  if (kept !== 'waited') {
    t.equal(kept.statusCode, 200)
    t.equal(kept.body, first.body, 'it is the kept answer')
  }
  const unchanged = await inTime(call(app, ann.pair, 'GET', list, undefined, { 'if-none-match': first.headers.etag as string }))
  t.equal(unchanged === 'waited' ? 'waited' : unchanged.statusCode, 304, 'and a 304 as well')

  await db.sql`update sessions set revoked_at = now() where user_id = (select id from users where email = ${ann.email})`
  const ended = await inTime(call(app, ann.pair, 'GET', list))
  t.equal(ended === 'waited' ? 'waited' : ended.statusCode, 401, 'a session ended meanwhile is refused at once')
})
