import t from 'tap'
import { randomBytes } from 'node:crypto'
import { sweepShares } from '../sql/shares'
import { build, call, familyOf, household, register } from './helper'
import { OPEN, type Json } from './import-helpers'
import { daysAhead, http, listening, makeShare, payloadOf, recordedChild, requestManifest, type HttpAnswer } from './share-helpers'

/** The headers a client or a cache acts on; the request id, the date and the rate limit's counters differ from any request to the next. */
function telling (answer: HttpAnswer): Record<string, string> {
  const headers: Record<string, string> = {}
  answer.headers.forEach((value, name) => {
    if (!['date', 'x-request-id', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'keep-alive', 'connection'].includes(name)) headers[name] = value
  })
  return headers
}

t.test('wrong passcodes count down, and the tenth kills the link, however many come at once', async t => {
  const app = await build(t, { env: OPEN })
  const origin = await listening(app)
  const owner = await register(app)
  const child = await recordedChild(app, owner, familyOf(owner))
  const { id, link } = (await makeShare(origin, owner, child.id, { passcode: 'blue whale 42', sections: ['immunizations'] })).json()
  t.equal(payloadOf(link).flag, 'P')

  const missing = await requestManifest(link, { recipient: 'ER' })
  t.equal(missing.status, 401)
  t.same(missing.json(), { remainingAttempts: 10, error: 'This link needs its passcode', code: 'PASSCODE_INVALID', details: { remainingAttempts: 10 } }, 'a missing passcode is no guess')
  for (const left of [9, 8, 7]) {
    const wrong = await requestManifest(link, { recipient: 'ER', passcode: `guess ${left}` })
    t.equal(wrong.status, 401)
    t.same(wrong.json(), { remainingAttempts: left, error: 'The passcode is wrong', code: 'PASSCODE_INVALID', details: { remainingAttempts: left } }, 'at the top level, as the specification writes it')
  }
  t.equal((await requestManifest(link, { recipient: 'ER', passcode: 'blue whale 42' })).status, 200, 'the right one still opens it')
  t.equal((await requestManifest(link, { recipient: 'ER', passcode: 'Blue whale 42' })).json().remainingAttempts, 6, 'and costs no attempt')

  // 20 guesses at once: 6 are checked, the others wait for none.
  const guesses = await Promise.all(Array.from({ length: 20 }, (_, i) => requestManifest(link, { recipient: `attacker ${i}`, passcode: `${i}` })))
  const wrong = guesses.filter(answer => answer.status === 401)
  t.equal(wrong.length, 6, 'exactly the 6 attempts left are checked')
  t.same(wrong.map(answer => answer.json().remainingAttempts).sort(), [0, 1, 2, 3, 4, 5], 'down to none')
  t.ok(guesses.every(answer => [401, 404, 429].includes(answer.status)), `the others are refused: ${guesses.map(answer => answer.status).join(' ')}`)
  for (const busy of guesses.filter(answer => answer.status === 429)) t.ok(Number(busy.headers.get('retry-after')) >= 1, 'a busy link says when to retry')
  const [row] = await app.sql`select wrong_passcodes, attempts_left, locked_at, content from shares where id = ${id}`
  t.match(row, { wrong_passcodes: 10, attempts_left: 0, content: null }, 'ten wrong passcodes in all, and the summary is gone')
  t.ok(row.locked_at instanceof Date)
  t.equal((await requestManifest(link, { recipient: 'ER', passcode: 'blue whale 42' })).status, 404, 'the link is dead, to the right passcode too')
  const share = (await call(app, owner, 'GET', `/api/shares/${id}`)).json()
  t.match(share, { status: 'locked', remainingAttempts: 0 })
  t.equal(share.accessCount, 1 + 3 + 2 + 20 + 1, 'every manifest request is in the log')
  const outcomes: Record<string, number> = {}
  for (const access of share.accesses) outcomes[access.outcome] = (outcomes[access.outcome] ?? 0) + 1
  t.equal(outcomes['passcode-wrong'], 10)
  t.equal(outcomes['passcode-missing'], 1)
  t.equal(outcomes.served, 1)
  t.equal((outcomes.refused ?? 0) + (outcomes.busy ?? 0), 20 - 6 + 1, 'the guesses not checked and the last request: busy, or refused for a dead link')
})

t.test('an expired, revoked or dead link and one that never existed answer the same', async t => {
  const app = await build(t, { env: OPEN })
  const origin = await listening(app)
  const owner = await register(app)
  const child = await recordedChild(app, owner, familyOf(owner))
  const make = async (): Promise<Json> => (await makeShare(origin, owner, child.id, { passcode: '1234', sections: ['growth'] })).json()
  const revoked = await make()
  const expired = await make()
  const dead = await make()
  const live = await make()
  t.equal((await call(app, owner, 'DELETE', `/api/shares/${revoked.id}`)).statusCode, 204)
  t.equal((await call(app, owner, 'DELETE', `/api/shares/${revoked.id}`)).statusCode, 204, 'revoking again changes nothing')
  await app.sql`update shares set expires_at = now() - interval '1 second' where id = ${expired.id}`
  for (let i = 0; i < 10; i++) await requestManifest(dead.link, { recipient: 'ER', passcode: 'nope' })
  const url = payloadOf(live.link).url
  const never = url.replace(/[^/]+$/, randomBytes(32).toString('base64url'))

  const body = JSON.stringify({ recipient: 'ER', passcode: '1234' })
  const post = (to: string) => http(to, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  const answers = {
    revoked: await post(payloadOf(revoked.link).url),
    expired: await post(payloadOf(expired.link).url),
    dead: await post(payloadOf(dead.link).url),
    never: await post(never),
    malformed: await post(url.replace(/[^/]+$/, 'not-a-token')),
    below: await post(`${url}/more`),
    get: await http(payloadOf(revoked.link).url)
  }
  const expected = { error: 'Share link not found', code: 'NOT_FOUND', details: {} }
  for (const [what, answer] of Object.entries(answers)) {
    t.equal(answer.status, 404, `${what}: 404`)
    t.same(answer.json(), expected, `${what}: the same body`)
    t.same(telling(answer), telling(answers.never), `${what}: the same headers`)
  }
  t.equal(answers.never.headers.get('cache-control'), 'no-store')
  t.equal(answers.never.headers.get('access-control-allow-origin'), '*', 'each readable by a page of any origin')
  t.equal((await post(url)).status, 200, 'the live link of the same child still answers')
  const statuses = (await call(app, owner, 'GET', `/api/children/${child.id}/shares?sort=createdAt`)).json().data.map((s: Json) => s.status)
  t.same(statuses, ['revoked', 'expired', 'locked', 'active'])
  const [refused] = (await call(app, owner, 'GET', `/api/shares/${revoked.id}`)).json().accesses
  t.match(refused, { recipient: 'ER', outcome: 'refused' }, 'a request for a revoked link is in its log')

  // A location handed out before the link was revoked serves nothing after.
  const located = (await requestManifest(live.link, { recipient: 'ER', passcode: '1234', embeddedLengthMax: 0 })).json().files[0].location
  await call(app, owner, 'DELETE', `/api/shares/${live.id}`)
  const late = await http(located)
  t.equal(late.status, 404)
  t.same(late.json(), expected)
  t.same((await app.sql`select content from shares where id = ${live.id}`)[0].content, null, 'a revoked link\'s summary is removed')

  // The sweep: the expired summary goes, and a link ended 90 days ago goes with its log.
  t.same(await sweepShares(app.sql, 90), { emptied: 1, removed: 0 })
  await app.sql`update shares set revoked_at = now() - interval '91 days' where id = ${revoked.id}`
  t.same(await sweepShares(app.sql, 90), { emptied: 0, removed: 1 })
  t.equal((await call(app, owner, 'GET', `/api/shares/${revoked.id}`)).statusCode, 404)
  t.equal((await app.sql`select count(*)::int as n from share_accesses where share_id = ${revoked.id}`)[0].n, 0)
  t.equal((await app.sql`select count(*)::int as n from share_file_links`)[0].n, 0, 'a location is gone once asked for')
  await app.sql`insert into share_file_links (token_hash, share_id, expires_at) values ('a', ${dead.id}, now() + interval '1 hour'), ('b', ${dead.id}, now())`
  await sweepShares(app.sql, 90)
  t.same((await app.sql`select token_hash from share_file_links`).map(row => row.token_hash), ['a'], 'an expired location goes')
})

t.test('who may make, list, read and revoke a child\'s links', async t => {
  const app = await build(t, { env: OPEN })
  const origin = await listening(app)
  const { owner, familyId, member, viewer, stranger } = await household(app, { member: 'member', viewer: 'viewer', stranger: null })
  const child = await recordedChild(app, owner, familyId)
  const mine = await makeShare(origin, member, child.id, { label: 'Member\'s link', sections: ['growth'] })
  t.equal(mine.status, 201, 'a member may share')
  const owners = (await makeShare(origin, owner, child.id, { label: 'Owner\'s link', sections: ['growth'] })).json()
  for (const { link } of [mine.json(), owners]) await requestManifest(link, { recipient: 'Dr. A' })

  const denied = { error: 'Access denied', code: 'FORBIDDEN', details: {} }
  for (const [who, pair] of [['viewer', viewer], ['another family', stranger]] as const) {
    const made = await makeShare(origin, pair, child.id, { sections: ['growth'] })
    t.equal(made.status, 403, `${who}: may not share`)
    t.same(made.json(), denied)
    t.equal((await call(app, pair, 'GET', `/api/children/${child.id}/shares`)).statusCode, 403, `${who}: may not list`)
    t.equal((await call(app, pair, 'GET', `/api/shares/${owners.id}`)).statusCode, 403, `${who}: may not read`)
    t.equal((await call(app, pair, 'DELETE', `/api/shares/${owners.id}`)).statusCode, 403, `${who}: may not revoke`)
  }
  t.equal((await makeShare(origin, owner, 999999, {})).status, 404, 'a missing child')
  t.equal((await call(app, owner, 'GET', '/api/shares/999999')).statusCode, 404, 'a missing share')
  t.equal((await call(app, owner, 'DELETE', '/api/shares/999999')).statusCode, 404)
  t.equal((await call(app, null, 'GET', `/api/children/${child.id}/shares`)).statusCode, 401)

  const byOwner = (await call(app, owner, 'GET', `/api/children/${child.id}/shares`)).json().data
  t.same(byOwner.map((s: Json) => [s.label, s.accesses.length]), [['Owner\'s link', 1], ['Member\'s link', 1]], 'the owner sees every log')
  const byMember = (await call(app, member, 'GET', `/api/children/${child.id}/shares`)).json().data
  t.same(byMember.map((s: Json) => [s.label, s.accessCount, s.accesses?.length ?? null]), [['Owner\'s link', 1, null], ['Member\'s link', 1, 1]],
    'a member sees the log of the links it made, and the count of the others')
  t.match(byMember[1].createdBy, { id: member.user.id, name: member.user.name })
  t.equal((await call(app, member, 'DELETE', `/api/shares/${owners.id}`)).statusCode, 204, 'a member may revoke any link of the child')
  t.equal((await requestManifest(owners.link, { recipient: 'Dr. A' })).status, 404)

  // Deleting the child removes its links.
  t.equal((await call(app, owner, 'DELETE', `/api/children/${child.id}`)).statusCode, 204)
  t.equal((await app.sql`select count(*)::int as n from shares`)[0].n, 0)
  t.equal((await requestManifest(mine.json().link, { recipient: 'Dr. A' })).status, 404)
})

t.test('what a link may be: its label, expiry, passcode and sections, and how many a child has', async t => {
  const app = await build(t, { env: OPEN })
  const origin = await listening(app)
  const owner = await register(app)
  const child = await recordedChild(app, owner, familyOf(owner))
  const refusals: Array<[Record<string, unknown>, string]> = [
    [{ expiresAt: new Date(Date.now() - 1000).toISOString() }, '/body/expiresAt'],
    [{ expiresAt: daysAhead(366) }, '/body/expiresAt'],
    [{ expiresAt: '2030-01-01' }, '/body/expiresAt'],
    [{ label: 'x'.repeat(81) }, '/body/label'],
    [{ label: '   ' }, '/body/label'],
    [{ passcode: '123' }, '/body/passcode'],
    [{ passcode: 'é'.repeat(37) }, '/body/passcode'],
    [{ sections: [] }, '/body/sections'],
    [{ sections: ['growth', 'growth'] }, '/body/sections'],
    [{ sections: ['x-rays'] }, '/body/sections/0'],
    [{ key: 'mine' }, '/body/key']
  ]
  for (const [body, path] of refusals) {
    const answer = await makeShare(origin, owner, child.id, body)
    t.equal(answer.status, 400, `${JSON.stringify(body).slice(0, 60)}: 400`)
    t.equal(answer.json().details.issues?.[0]?.path, path, `naming ${path}`)
  }
  t.equal((await makeShare(origin, owner, child.id, { expiresAt: daysAhead(364), passcode: 'é'.repeat(36) })).status, 201, 'a year ahead, and a passcode of 72 bytes')

  // Files beyond what a link carries are refused before anything is read.
  await app.sql`insert into attachments (child_id, file_name, stored_name, content_type, size_bytes) values (${child.id}, 'scan.pdf', 'missing.pdf', 'application/pdf', ${10 * 1024 * 1024})`
  const large = await makeShare(origin, owner, child.id, { sections: ['attachments'] })
  t.equal(large.status, 400)
  t.match(large.json().details.issues[0], { path: '/body/sections', message: /more than the 10485760 a link may carry/ })

  // At most 20 active links a child.
  const [{ n }] = await app.sql`select count(*)::int as n from shares where child_id = ${child.id}`
  for (let i = n; i < 20; i++) t.equal((await makeShare(origin, owner, child.id, { sections: ['immunizations'] })).status, 201)
  const extra = await makeShare(origin, owner, child.id, { sections: ['immunizations'] })
  t.equal(extra.status, 409)
  t.match(extra.json(), { code: 'CONFLICT', error: /at most 20 active share links/ })
  const [first] = (await call(app, owner, 'GET', `/api/children/${child.id}/shares?sort=createdAt&limit=1`)).json().data
  await call(app, owner, 'DELETE', `/api/shares/${first.id}`)
  t.equal((await makeShare(origin, owner, child.id, { sections: ['immunizations'] })).status, 201, 'a revoked link leaves room')
  const page = (await call(app, owner, 'GET', `/api/children/${child.id}/shares?status=active&limit=5&offset=5&sort=-expiresAt`)).json()
  t.same(page.meta, { total: 20, limit: 5, offset: 5 })
  t.equal((await call(app, owner, 'GET', `/api/children/${child.id}/shares?status=revoked`)).json().meta.total, 1)
  t.equal((await call(app, owner, 'GET', `/api/children/${child.id}/shares?sort=label`)).statusCode, 400)
  t.equal((await call(app, owner, 'GET', `/api/children/${child.id}/shares?status=gone`)).statusCode, 400)
})

t.test('neither the database nor the logs hold a link\'s key, token or passcode', async t => {
  const logs: string[] = []
  const app = await build(t, { env: { ...OPEN, LOG_LEVEL: 'trace' }, logs })
  const origin = await listening(app)
  const owner = await register(app)
  const child = await recordedChild(app, owner, familyOf(owner))
  const { link } = (await makeShare(origin, owner, child.id, { passcode: 'tulip 5150', sections: ['growth', 'attachments'] })).json()
  const { key, url } = payloadOf(link)
  const token = url.split('/').pop() as string
  await requestManifest(link, { recipient: 'Dr. Osei', passcode: 'tulip 5150' })
  const located = (await requestManifest(link, { recipient: 'Dr. Osei', passcode: 'tulip 5150', embeddedLengthMax: 0 })).json().files[0].location
  await http(located)
  await requestManifest(link, { recipient: 'Dr. Osei', passcode: 'wrong one' })

  const secrets = { key, token, passcode: 'tulip 5150', link: link.slice(8, 60), ticket: located.split('/').pop() as string, keyHex: Buffer.from(key, 'base64url').toString('hex') }
  const tables = ['shares', 'share_accesses', 'share_file_links']
  for (const table of tables) {
    const dump = JSON.stringify(await app.sql`select * from ${app.sql(table)}`)
    for (const [name, secret] of Object.entries(secrets)) t.notOk(dump.includes(secret), `${table} holds no ${name}`)
  }
  const [row] = await app.sql`select token_hash, passcode_hash, content from shares`
  t.match(row.passcode_hash, /^\$2[aby]\$/, 'the passcode as a bcrypt hash')
  t.same(JSON.parse(Buffer.from(row.content.split('.')[0], 'base64url').toString()), { alg: 'dir', enc: 'A256GCM', cty: 'application/fhir+json' }, 'the stored file is the JWE')
  t.notOk(row.content.includes('Noor'), 'and holds nothing in the clear')

  const text = logs.join('')
  t.ok(text.includes('/api/shl/[redacted]'), 'the manifest requests are logged, their path without the token')
  for (const [name, secret] of Object.entries(secrets)) t.notOk(text.includes(secret), `the logs hold no ${name}`)
})

t.test('manifest requests are rate-limited per client address, like the auth routes', async t => {
  const app = await build(t, { env: { ...OPEN, AUTH_RATE_LIMIT_MAX: '3' } })
  const origin = await listening(app)
  const owner = await register(app)
  const child = await recordedChild(app, owner, familyOf(owner))
  const { link } = (await makeShare(origin, owner, child.id, { sections: ['immunizations'] })).json()
  for (let i = 0; i < 3; i++) t.equal((await requestManifest(link, { recipient: 'ER' })).status, 200)
  const refused = await requestManifest(link, { recipient: 'ER' })
  t.equal(refused.status, 429)
  t.equal(refused.json().code, 'RATE_LIMITED')
  t.ok(Number(refused.headers.get('retry-after')) >= 1, 'with Retry-After')
  t.equal(refused.headers.get('access-control-allow-origin'), '*', 'which a viewer of any origin may read')
  t.equal((await app.sql`select count(*)::int as n from share_accesses`)[0].n, 3, 'a request over the limit reaches no link')
})
