import t from 'tap'
import { createHash } from 'node:crypto'
import sharp from 'sharp'
import { buildApp, type App } from '../app'
import { canonicalJson } from '../lib/idempotency'
import { POOL_SIZE } from '../db/client'
import { bearer, build, PASSWORD, register, testConfig, testDatabase } from './helper'
import { family, listening, measurementCount, OPEN, send, setup, until, type Sent } from './idempotency-helpers'
import { ntfyServer } from './reminder-receivers'
import { file, form } from './multipart'
import { archivePayload } from './route-samples'

// Idempotency keys of every kind of write over real HTTP: uploads, deletes,
// an archive import, answers that hold a credential, and two instances.

t.test('uploads and deletes are keyed as whole requests', async t => {
  const { origin, owner, childId, sql } = await setup(t)
  const png = await sharp({ create: { width: 4, height: 4, channels: 3, background: '#3a3' } }).png().toBuffer()
  const upload = async (bytes: Buffer): Promise<Sent> => {
    // Each request gets a multipart boundary of its own.
    const { payload, headers } = form([file(bytes, 'scan.png', 'image/png')])
    const res = await fetch(`${origin}/api/children/${childId}/attachments`, {
      method: 'POST', headers: { ...bearer(owner.accessToken), ...headers, 'idempotency-key': 'upload' }, body: payload
    })
    const text = await res.text()
    return { status: res.status, headers: res.headers, text, json: JSON.parse(text) }
  }
  const first = await upload(png)
  t.equal(first.status, 201, first.text)
  const again = await upload(png)
  t.equal(again.status, 201)
  t.equal(again.headers.get('idempotent-replayed'), 'true', 'the same file under another boundary is the same request')
  t.equal(again.json.id, first.json.id)
  const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from attachments where child_id = ${childId}`
  t.equal(n, 1)
  const other = await upload(Buffer.concat([png, Buffer.from('extra')]))
  t.equal(other.status, 422, 'another file is another request')

  const removed = await send(origin, owner, 'DELETE', `/api/attachments/${first.json.id as number}`, undefined, { 'idempotency-key': 'remove' })
  t.equal(removed.status, 204)
  const removedAgain = await send(origin, owner, 'DELETE', `/api/attachments/${first.json.id as number}`, undefined, { 'idempotency-key': 'remove' })
  t.equal(removedAgain.status, 204, 'a repeated delete answers its first answer, not 404')
  t.equal(removedAgain.headers.get('idempotent-replayed'), 'true')
})

t.test('an answer that holds a credential is not stored in the clear', async t => {
  const { origin, owner, familyId, sql } = await setup(t)
  const invite = await send(origin, owner, 'POST', `/api/families/${familyId}/invites`, { email: 'grandma@example.org', role: 'viewer' }, { 'idempotency-key': 'invite' })
  t.equal(invite.status, 201)
  const token = invite.json.token as string
  const [row] = await sql<{ answer: Buffer }[]>`select answer from idempotency_keys where key = 'invite'`
  t.notOk(row.answer.toString('latin1').includes(token), 'the invite token is not in the stored answer')
  t.notOk(row.answer.toString('latin1').includes('grandma'), 'nor anything else of the answer')
  const again = await send(origin, owner, 'POST', `/api/families/${familyId}/invites`, { email: 'grandma@example.org', role: 'viewer' }, { 'idempotency-key': 'invite' })
  t.equal(again.json.token, token, 'the replay gives the same token')

  // A body may hold a password: only a keyed hash of it is kept.
  const change = { currentPassword: PASSWORD, newPassword: 'another long password' }
  t.equal((await send(origin, owner, 'POST', '/api/me/password', change, { 'idempotency-key': 'password' })).status, 204)
  const [kept] = await sql<{ fingerprint: string }[]>`select fingerprint from idempotency_keys where key = 'password'`
  const plain = createHash('sha256').update(canonicalJson(['POST', '/api/me/password', change, null])).digest('hex')
  t.not(kept.fingerprint, plain, 'not a plain hash of the body, which a guesser could test passwords against')
})

t.test('keys are honoured across two instances of one database', async t => {
  const db = await testDatabase(t)
  const instance = async (): Promise<App> => {
    const app = await buildApp(testConfig(t, db.url, OPEN))
    t.teardown(() => app.close())
    return app
  }
  const [a, b] = [await instance(), await instance()]
  const [originA, originB] = [await listening(a), await listening(b)]
  const { owner, childId } = await family(originA, a)
  const path = `/api/children/${childId}/measurements`
  const body = { measuredAt: '2024-05-01', weightKg: 13 }
  const first = await send(originA, owner, 'POST', path, body, { 'idempotency-key': 'shared' })
  t.equal(first.status, 201)
  const onB = await send(originB, owner, 'POST', path, body, { 'idempotency-key': 'shared' })
  t.equal(onB.status, 201)
  t.equal(onB.headers.get('idempotent-replayed'), 'true', 'the other instance replays the answer')
  t.equal(onB.json.id, first.json.id)
  t.equal((await send(originB, owner, 'POST', path, { ...body, weightKg: 14 }, { 'idempotency-key': 'shared' })).status, 422)

  const both = await Promise.all(Array.from({ length: 20 }, async (_, i) =>
    await send(i % 2 === 0 ? originA : originB, owner, 'POST', path, body, { 'idempotency-key': 'both' })))
  t.ok(both.every(answer => answer.status === 201 || answer.status === 409), both.map(answer => answer.status).join(','))
  t.equal(await measurementCount(db.sql, childId), 2, 'one row for each key, whichever instance answered')
})

t.test('an archive import is keyed too, its answer kept just after its own commit', async t => {
  const { app, origin, owner, sql } = await setup(t)
  const { payload, headers } = await archivePayload(app)
  const send = async (): Promise<Sent> => {
    const res = await fetch(`${origin}/api/families/import`, {
      method: 'POST', headers: { ...bearer(owner.accessToken), ...headers, 'idempotency-key': 'import' }, body: payload
    })
    const text = await res.text()
    return { status: res.status, headers: res.headers, text, json: JSON.parse(text) }
  }
  const first = await send()
  t.equal(first.status, 201, first.text)
  const again = await send()
  t.equal(again.status, 201)
  t.equal(again.headers.get('idempotent-replayed'), 'true')
  t.equal(again.json.family.id, first.json.family.id, 'the same family')
  const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from families where name = 'Imported'`
  t.equal(n, 1, 'imported once')
  const [row] = await sql<{ state: string }[]>`select state from idempotency_keys where key = 'import'`
  t.equal(row.state, 'done')
})

t.test('a keyed write that waits on the network holds no database connection meanwhile', async t => {
  const ntfy = await ntfyServer(t)
  ntfy.delay = 3000
  const app = await build(t, { env: { ...OPEN, WEBHOOK_ALLOW_PRIVATE: 'true' } })
  const origin = await listening(app)
  // More users than the pool has connections, each sending a channel whose test message takes 3 s.
  const users = await Promise.all(Array.from({ length: POOL_SIZE + 2 }, () => register(app)))
  const puts = users.map((user, i) => send(origin, user, 'PUT', '/api/me/notifications',
    { channels: [{ type: 'ntfy', url: `${ntfy.origin}/slow-${i}` }] }, { 'idempotency-key': `slow-${i}` }))
  await until(async () => ntfy.hits.length === users.length, 10_000)
  const started = Date.now()
  const read = await send(origin, users[0], 'GET', '/api/me')
  t.equal(read.status, 200)
  t.ok(Date.now() - started < 1500, `another request answers while they wait (${Date.now() - started} ms)`)
  const [{ waiting }] = await app.db.sql<{ waiting: number }[]>`
    select count(*)::int as waiting from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'
  `
  t.equal(waiting, 0, 'no transaction is open while the test messages are on their way')
  const answers = await Promise.all(puts)
  t.same(answers.map(answer => answer.status), users.map(() => 200), 'each channel is taken')
  const again = await send(origin, users[1], 'PUT', '/api/me/notifications', { channels: [{ type: 'ntfy', url: `${ntfy.origin}/slow-1` }] }, { 'idempotency-key': 'slow-1' })
  t.equal(again.headers.get('idempotent-replayed'), 'true', 'and its key is kept')
  t.equal(ntfy.hits.length, users.length, 'the replay sends no test message')
})
