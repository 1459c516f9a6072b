import t from 'tap'
import { keepsAnswer, fingerprint, keysOf } from '../lib/idempotency'
import { answerFor } from '../plugins/errors'
import { sweepKeys } from '../sql/idempotency-keys'
import { bearer, build, call, familyOf, join, register, TEST_ENV } from './helper'
import { family, listening, measurementCount, OPEN, send, sendAndHangUp, setup, until } from './idempotency-helpers'

// Idempotency keys over real HTTP: what is kept, replayed, refused and taken
// over. Uploads, imports, credentials and two instances: idempotency-kinds.test.ts.

t.test('a create whose answer was lost is answered again, written once', async t => {
  const { origin, owner, childId, sql } = await setup(t)
  const path = `/api/children/${childId}/measurements`
  const body = JSON.stringify({ measuredAt: '2024-01-05', weightKg: 11.2 })
  await sendAndHangUp(origin, [
    `POST ${path} HTTP/1.1`, 'Host: 127.0.0.1', `Authorization: Bearer ${owner.accessToken}`, 'Content-Type: application/json',
    'Idempotency-Key: lost-answer-1', `Content-Length: ${Buffer.byteLength(body)}`, '', body
  ].join('\r\n'))
  t.ok(await until(async () => (await sql`select state from idempotency_keys where key = 'lost-answer-1'`)[0]?.state === 'done'), 'the first request ran to its end')
  t.equal(await measurementCount(sql, childId), 1, 'the measurement was written')

  const again = await send(origin, owner, 'POST', path, JSON.parse(body), { 'idempotency-key': 'lost-answer-1' })
  t.equal(again.status, 201)
  t.equal(again.headers.get('idempotent-replayed'), 'true')
  t.equal(again.json.weightKg, 11.2)
  t.match(again.headers.get('location'), new RegExp(`^/api/measurements/${again.json.id as number}$`))
  t.equal(await measurementCount(sql, childId), 1, 'nothing more was written')

  const fresh = await send(origin, owner, 'POST', path, JSON.parse(body), { 'idempotency-key': 'lost-answer-2' })
  t.equal(fresh.status, 201, 'another key writes again')
  t.equal(fresh.headers.get('idempotent-replayed'), null, 'a first answer is not marked as replayed')
  t.not(fresh.json.id, again.json.id)
  t.equal(await measurementCount(sql, childId), 2)
})

t.test('50 concurrent repeats of one key write one row', async t => {
  const { origin, owner, childId, sql } = await setup(t)
  const path = `/api/children/${childId}/measurements`
  const answers = await Promise.all(Array.from({ length: 50 }, async () =>
    await send(origin, owner, 'POST', path, { measuredAt: '2024-02-01', weightKg: 12 }, { 'idempotency-key': 'one-key' })))
  t.equal(await measurementCount(sql, childId), 1, 'one row')
  const created = answers.filter(answer => answer.status === 201)
  const refused = answers.filter(answer => answer.status === 409)
  t.equal(created.length + refused.length, 50, `every answer is the first answer or 409 (${answers.map(a => a.status).join(',')})`)
  t.ok(created.length >= 1)
  t.equal(new Set(created.map(answer => answer.json.id)).size, 1, 'every 201 names the same measurement')
  for (const answer of refused) t.equal(answer.json.code, 'IDEMPOTENCY_KEY_IN_FLIGHT')
  const replay = await send(origin, owner, 'POST', path, { measuredAt: '2024-02-01', weightKg: 12 }, { 'idempotency-key': 'one-key' })
  t.equal(replay.status, 201, 'once the first has answered, a repeat is its answer')
  t.equal(replay.json.id, created[0].json.id)
})

t.test('a key used with another request is 422; keys are the user\'s own', async t => {
  const { app, origin, owner, childId, sql } = await setup(t)
  const path = `/api/children/${childId}/measurements`
  const first = await send(origin, owner, 'POST', path, { measuredAt: '2024-03-01', weightKg: 12 }, { 'idempotency-key': 'k' })
  t.equal(first.status, 201)
  const reordered = await fetch(origin + path, {
    method: 'POST',
    headers: { ...bearer(owner.accessToken), 'content-type': 'application/json', 'idempotency-key': 'k' },
    body: '{ "weightKg": 12,   "measuredAt": "2024-03-01" }'
  })
  t.equal(reordered.status, 201, 'the same values in another order and spacing are the same body')
  t.equal(((await reordered.json()) as { id: number }).id, first.json.id)

  const other = await send(origin, owner, 'POST', path, { measuredAt: '2024-03-01', weightKg: 13 }, { 'idempotency-key': 'k' })
  t.equal(other.status, 422)
  t.equal(other.json.code, 'IDEMPOTENCY_KEY_REUSED')
  const elsewhere = await send(origin, owner, 'POST', `/api/measurements`, { childId, measuredAt: '2024-03-01', weightKg: 12 }, { 'idempotency-key': 'k' })
  t.equal(elsewhere.status, 422, 'another path is another request')
  const patch = await send(origin, owner, 'PATCH', `/api/measurements/${first.json.id as number}`, { notes: 'x' }, { 'idempotency-key': 'k' })
  t.equal(patch.status, 422, 'another method is another request')
  t.equal(await measurementCount(sql, childId), 1)

  // Another user's key of the same name is another key.
  const stranger = await register(app)
  const theirs = await send(origin, stranger, 'POST', path, { measuredAt: '2024-03-01', weightKg: 13 }, { 'idempotency-key': 'k' })
  t.equal(theirs.status, 403, 'the stranger\'s own request runs, and is refused as it would be')
  t.equal(theirs.json.code, 'FORBIDDEN')
})

t.test('a malformed key is a 400 naming the header', async t => {
  const { origin, owner, childId, sql } = await setup(t)
  const path = `/api/children/${childId}/measurements`
  for (const key of ['x'.repeat(256), 'caf\u00e9', '']) {
    const res = await send(origin, owner, 'POST', path, { measuredAt: '2024-03-01', weightKg: 12 }, { 'idempotency-key': key })
    t.equal(res.status, 400, `key of ${key.length} characters`)
    t.equal(res.json.code, 'VALIDATION_ERROR')
    t.same(res.json.details.issues, [{ path: '/headers/idempotency-key', message: 'must be 1 to 255 printable ASCII characters' }])
  }
  t.equal((await send(origin, owner, 'POST', path, { measuredAt: '2024-03-01', weightKg: 12 }, { 'idempotency-key': 'x'.repeat(255) })).status, 201, '255 characters are fine')
  t.equal(await measurementCount(sql, childId), 1)
})

t.test('refusals are kept, retries of what may pass are not', async t => {
  const { app, origin, owner, childId, sql } = await setup(t)
  const path = `/api/children/${childId}/measurements`
  // A refusal the client can act on is kept: the same request gets it again.
  const bad = await send(origin, owner, 'POST', path, { measuredAt: '2020-01-01', weightKg: 12 }, { 'idempotency-key': 'before-birth' })
  t.equal(bad.status, 400)
  const badAgain = await send(origin, owner, 'POST', path, { measuredAt: '2020-01-01', weightKg: 12 }, { 'idempotency-key': 'before-birth' })
  t.equal(badAgain.status, 400)
  t.equal(badAgain.headers.get('idempotent-replayed'), 'true', 'a kept refusal is replayed')
  t.same(badAgain.json, bad.json)

  // A 401 is not kept: once signed in again, the same key runs.
  const viewer = await register(app)
  await send(origin, viewer, 'POST', '/api/auth/logout', {})
  const refused = await send(origin, viewer, 'POST', path, { measuredAt: '2024-01-01', weightKg: 12 }, { 'idempotency-key': 'signed-out' })
  t.equal(refused.status, 401)
  t.same(await sql`select key from idempotency_keys where key = 'signed-out'`, [], 'nothing is kept of a 401')
})

t.test('a 5xx is not kept, and what its request wrote rolls back with it', async t => {
  let failures = 1
  const app = await build(t, {
    env: OPEN,
    routes: app => {
      app.register(async api => {
        api.addHook('onRequest', api.authenticate)
        api.post('/api/test/flaky/:childId', { schema: { security: [{ bearer: [] }] } }, async (request, reply) => {
          const { childId } = request.params as { childId: string }
          await request.db`insert into measurements (child_id, measured_at, weight_kg) values (${Number(childId)}, '2024-01-01', 10)`
          if (failures > 0) {
            failures -= 1
            throw new Error('failed after writing')
          }
          return reply.code(201).send({ ok: true })
        })
      })
    }
  })
  const origin = await listening(app)
  const { owner, childId } = await family(origin, app)
  const first = await send(origin, owner, 'POST', `/api/test/flaky/${childId}`, {}, { 'idempotency-key': 'flaky' })
  t.equal(first.status, 500)
  t.equal(await measurementCount(app.db.sql, childId), 0, 'the write of a request that failed is rolled back')
  const second = await send(origin, owner, 'POST', `/api/test/flaky/${childId}`, {}, { 'idempotency-key': 'flaky' })
  t.equal(second.status, 201, 'the retry runs again')
  t.equal(second.headers.get('idempotent-replayed'), null)
  t.equal(await measurementCount(app.db.sql, childId), 1)
  const third = await send(origin, owner, 'POST', `/api/test/flaky/${childId}`, {}, { 'idempotency-key': 'flaky' })
  t.equal(third.headers.get('idempotent-replayed'), 'true')
  t.equal(await measurementCount(app.db.sql, childId), 1)
})

t.test('a key whose request died is taken over once stale; expired keys run afresh and are swept', async t => {
  const { app, origin, owner, childId, sql } = await setup(t)
  const path = `/api/children/${childId}/measurements`
  const body = { measuredAt: '2024-04-01', weightKg: 12 }
  const print = fingerprint(keysOf([TEST_ENV.JWT_SECRET])[0].print, 'POST', path, body, null)
  const claim = async (key: string, touched: string): Promise<void> => {
    await sql`
      insert into idempotency_keys (user_id, key, method, path, fingerprint, claim, state, touched_at, expires_at)
      values (${owner.user.id}, ${key}, 'POST', ${path}, ${print}, gen_random_uuid(), 'running', now() - ${touched}::interval, now() + interval '1 day')
    `
  }
  await claim('alive', '1 second')
  const busy = await send(origin, owner, 'POST', path, body, { 'idempotency-key': 'alive' })
  t.equal(busy.status, 409, 'a running request holds its key')
  t.equal(busy.json.code, 'IDEMPOTENCY_KEY_IN_FLIGHT')
  await claim('dead', '61 seconds')
  const taken = await send(origin, owner, 'POST', path, body, { 'idempotency-key': 'dead' })
  t.equal(taken.status, 201, 'a request silent for longer than REQUEST_TIMEOUT died: its key is taken over')
  t.equal(await measurementCount(sql, childId), 1)

  await sql`update idempotency_keys set expires_at = now() - interval '1 second' where key = 'dead'`
  const afresh = await send(origin, owner, 'POST', path, body, { 'idempotency-key': 'dead' })
  t.equal(afresh.status, 201)
  t.equal(afresh.headers.get('idempotent-replayed'), null, 'an expired key runs afresh')
  t.equal(await measurementCount(sql, childId), 2)
  await sql`update idempotency_keys set expires_at = now() - interval '1 second' where key = 'dead'`
  t.equal(await sweepKeys(app.sql, 1000), 1, 'the sweep deletes the expired key')
  t.same(await sql`select key from idempotency_keys where key = 'dead'`, [])
})

t.test('an answer that says to try again is not kept', async t => {
  for (const status of [200, 201, 204, 400, 403, 404, 409, 412, 422]) t.ok(keepsAnswer(status, false), `${status} is kept`)
  for (const status of [401, 408, 429, 500, 503]) t.notOk(keepsAnswer(status, false), `${status} is not kept`)
  t.notOk(keepsAnswer(409, true), 'nor any answer with Retry-After')
  // Two transactions that collided: the request itself was fine, and says so.
  const collided = Object.assign(new Error('could not serialize access'), { name: 'PostgresError', code: '40001', severity: 'ERROR' })
  const answer = answerFor(collided as never, { body: null } as never, true)
  t.equal(answer.status, 409)
  t.equal(answer.retryAfter, 1, 'a collision answers Retry-After, so its 409 is not kept')
})

t.test('a repeat is answered again only after the access checks a new request passes', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const home = familyOf(owner)
  const away = (await call(app, owner, 'POST', '/api/families', { name: 'Away' })).json().id
  const childId = (await call(app, owner, 'POST', '/api/children', { name: 'Ada', dateOfBirth: '2022-01-01', sex: 'female', familyId: away })).json().id
  const invite = { email: 'newcomer@example.org', role: 'owner' }
  const first = await call(app, owner, 'POST', `/api/families/${away}/invites`, invite, { 'idempotency-key': 'invite-1' })
  t.equal(first.statusCode, 201)
  t.equal((await call(app, owner, 'POST', `/api/families/${away}/invites`, invite, { 'idempotency-key': 'invite-1' })).headers['idempotent-replayed'], 'true', 'the user\'s session gets the first answer again')

  const made = await call(app, owner, 'POST', '/api/me/tokens', { name: 'home only', scope: 'write', familyId: home })
  const bound = { ...owner, accessToken: made.json().token }
  const repeat = await call(app, bound, 'POST', `/api/families/${away}/invites`, invite, { 'idempotency-key': 'invite-1' })
  t.equal(repeat.statusCode, 403, 'a token bound to another family gets the 403 of any request to this one')
  t.same(repeat.json(), { error: 'Access denied', code: 'FORBIDDEN', details: {} })
  t.notOk(repeat.body.includes(first.json().token), 'and not the invite\'s token')
  t.equal(repeat.headers['idempotent-replayed'], undefined)

  const member = await register(app)
  await join(app, owner, away, member, 'member')
  const measurement = { measuredAt: '2023-01-01', weightKg: 9.1 }
  const created = await call(app, member, 'POST', `/api/children/${childId}/measurements`, measurement, { 'idempotency-key': 'weigh-1' })
  t.equal(created.statusCode, 201)
  t.equal((await call(app, owner, 'DELETE', `/api/families/${away}/members/${member.user.id}`)).statusCode, 204)
  const after = await call(app, member, 'POST', `/api/children/${childId}/measurements`, measurement, { 'idempotency-key': 'weigh-1' })
  t.equal(after.statusCode, 403, 'a member removed since gets the 403 of a one-statement create, not the first answer')
  t.equal(after.headers['idempotent-replayed'], undefined)
  t.equal((await app.sql`select count(*)::int as n from measurements`)[0].n, 1, 'and nothing is written')
})
