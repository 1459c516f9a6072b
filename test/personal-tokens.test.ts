import t from 'tap'
import { createHash } from 'node:crypto'
import { bearer, build, call, familyOf, join, PASSWORD, register, type App, type Pair } from './helper'
import { ntfyServer } from './reminder-receivers'

const OPEN = { REGISTRATION: 'open' }

/** A personal access token made through the real route. */
async function makeToken (app: App, pair: Pair, body: Record<string, unknown>): Promise<{ id: number, token: string }> {
  const res = await call(app, pair, 'POST', '/api/me/tokens', body)
  if (res.statusCode !== 201) throw new Error(`token answered ${res.statusCode}: ${res.body}`)
  return res.json()
}

/** A request with a personal access token as the bearer. */
function withToken (app: App, token: string, method: string, url: string, payload?: unknown) {
  return app.inject({ method: method as 'GET', url, headers: bearer(token), ...(payload === undefined ? {} : { payload: payload as object }) })
}

async function child (app: App, pair: Pair, familyId: number, name = 'Noa') {
  const res = await call(app, pair, 'POST', '/api/children', { name, dateOfBirth: '2021-06-01', sex: 'female', familyId })
  if (res.statusCode !== 201) throw new Error(`child answered ${res.statusCode}: ${res.body}`)
  return res.json().id as number
}

t.test('a token is shown once, kept as a hash, listed without it, and ends when deleted', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const res = await call(app, owner, 'POST', '/api/me/tokens', { name: ' Home Assistant ', scope: 'read' })
  t.equal(res.statusCode, 201)
  t.equal(res.headers['cache-control'], 'no-store')
  const created = res.json()
  t.match(created.token, /^cht_[A-Za-z0-9_-]{43}$/, 'cht_ and 32 random bytes in base64url')
  t.same(Object.keys(created).sort(), ['createdAt', 'expiresAt', 'familyId', 'id', 'lastUsedAt', 'name', 'scope', 'token'])
  t.equal(created.name, 'Home Assistant', 'the name is trimmed')
  t.equal(created.expiresAt, null)
  t.equal(created.lastUsedAt, null, 'not used yet')

  const stored = await app.sql`select token_hash from sessions where token_hash is not null`
  t.same(stored.map(row => row.token_hash), [createHash('sha256').update(created.token).digest('hex')], 'only its SHA-256 is kept')

  const read = await withToken(app, created.token, 'GET', '/api/me')
  t.equal(read.statusCode, 200, 'a token is a bearer like an access token')
  t.equal(read.json().id, owner.user.id)

  const list = await call(app, owner, 'GET', '/api/me/tokens')
  t.equal(list.statusCode, 200)
  t.equal(list.json().meta.total, 1)
  t.notOk(list.body.includes(created.token), 'never the token in a list')
  t.match(list.json().data[0], { id: created.id, name: 'Home Assistant', scope: 'read', familyId: null })
  t.match(list.json().data[0].lastUsedAt, /^\d{4}-/, 'its first use is recorded')

  const sessions = await call(app, owner, 'GET', '/api/me/sessions')
  t.notOk(sessions.json().data.some((s: { id: number }) => s.id === created.id), 'a token is not listed among the sessions')
  t.equal((await call(app, owner, 'DELETE', `/api/me/sessions/${created.id}`)).statusCode, 404, 'nor ended as one')

  const other = await register(app)
  t.equal((await call(app, other, 'DELETE', `/api/me/tokens/${created.id}`)).statusCode, 404, 'another user\'s token is not found')
  t.equal((await withToken(app, created.token, 'GET', '/api/me')).statusCode, 200)

  t.equal((await call(app, owner, 'DELETE', `/api/me/tokens/${created.id}`)).statusCode, 204)
  const after = await withToken(app, created.token, 'GET', '/api/me')
  t.equal(after.statusCode, 401, 'a deleted token is refused at once')
  t.equal(after.json().code, 'UNAUTHORIZED')
  t.equal((await call(app, owner, 'DELETE', `/api/me/tokens/${created.id}`)).statusCode, 404, 'and is gone')
  t.equal((await call(app, owner, 'GET', '/api/me/tokens')).json().meta.total, 0)
})

t.test('what a token is made with is checked', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const stranger = await register(app)
  const bad = async (body: Record<string, unknown>, status: number, path?: string) => {
    const res = await call(app, owner, 'POST', '/api/me/tokens', body)
    t.equal(res.statusCode, status, JSON.stringify(body))
    if (path !== undefined) t.ok(res.json().details.issues.some((issue: { path: string }) => issue.path === path), `names ${path}`)
    return res
  }
  await bad({ name: 'x', scope: 'admin' }, 400, '/body/scope')
  await bad({ name: '  ', scope: 'read' }, 400, '/body/name')
  await bad({ name: 'x'.repeat(101), scope: 'read' }, 400, '/body/name')
  await bad({ scope: 'read' }, 400, '/body/name')
  await bad({ name: 'x', scope: 'read', admin: true }, 400)
  await bad({ name: 'x', scope: 'read', expiresAt: 'tomorrow' }, 400, '/body/expiresAt')
  await bad({ name: 'x', scope: 'read', expiresAt: new Date(Date.now() - 1000).toISOString() }, 400, '/body/expiresAt')
  const notMine = await bad({ name: 'x', scope: 'read', familyId: familyOf(stranger) }, 403)
  t.equal(notMine.json().code, 'FORBIDDEN', 'a family the user is not in: 403, as for any of its data')
  t.equal((await bad({ name: 'x', scope: 'read', familyId: 2147483647 }, 404)).json().code, 'NOT_FOUND', 'a family that does not exist: 404')
  t.equal((await app.sql`select count(*)::int as n from sessions where token_hash is not null`)[0].n, 0, 'none was made')

  const later = new Date(Date.now() + 3600_000).toISOString()
  const expiring = await call(app, owner, 'POST', '/api/me/tokens', { name: 'x', scope: 'write', familyId: familyOf(owner), expiresAt: later })
  t.equal(expiring.statusCode, 201)
  t.equal(Date.parse(expiring.json().expiresAt), Date.parse(later))
  t.equal(expiring.json().familyId, familyOf(owner))
})

t.test('a user has at most 50 tokens', async t => {
  const app = await build(t)
  const owner = await register(app)
  const made = await Promise.all(Array.from({ length: 50 }, (_, i) => call(app, owner, 'POST', '/api/me/tokens', { name: `t${i}`, scope: 'read' })))
  t.same([...new Set(made.map(res => res.statusCode))], [201])
  const over = await call(app, owner, 'POST', '/api/me/tokens', { name: 'one more', scope: 'read' })
  t.equal(over.statusCode, 409)
  t.equal(over.json().code, 'CONFLICT')
})

t.test('a read token reads and writes nothing', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const familyId = familyOf(owner)
  const childId = await child(app, owner, familyId)
  const { token } = await makeToken(app, owner, { name: 'dashboard', scope: 'read' })

  t.equal((await withToken(app, token, 'GET', `/api/children/${childId}`)).statusCode, 200)
  t.equal((await withToken(app, token, 'GET', `/api/children/${childId}/measurements`)).statusCode, 200)
  const counts = async () => JSON.stringify(await app.sql`select (select count(*) from measurements) m, (select count(*) from children) c, (select count(*) from calendar_feeds) f`)
  const before = await counts()
  for (const [method, url, body] of [
    ['POST', `/api/children/${childId}/measurements`, { measuredAt: '2022-01-01', weightKg: 9 }],
    ['POST', '/api/measurements', { childId, measuredAt: '2022-01-01', weightKg: 9 }],
    ['POST', `/api/children/${childId}/measurements`, { measuredAt: 'not a date' }],
    ['PATCH', `/api/children/${childId}`, { name: 'Renamed' }],
    ['DELETE', `/api/children/${childId}`, undefined],
    ['POST', '/api/children', { name: 'New', dateOfBirth: '2021-01-01', sex: 'male', familyId }],
    ['POST', '/api/me/calendar-feeds', { familyId }],
    ['POST', '/api/families', { name: 'Another' }]
  ] as const) {
    const res = await withToken(app, token, method, url, body)
    t.equal(res.statusCode, 403, `${method} ${url}`)
    t.same(res.json(), { error: 'Access denied', code: 'FORBIDDEN', details: {} })
  }
  t.equal(await counts(), before, 'nothing was written, the one-statement creates included')
  const ticket = await withToken(app, token, 'POST', `/api/families/${familyId}/events/tickets`, {})
  t.equal(ticket.statusCode, 201, 'a read token may ask for an event ticket, which only reads')
})

t.test('no token reads or changes where reminders go: the channels hold addresses and credentials', async t => {
  const ntfy = await ntfyServer(t)
  const app = await build(t, { env: { ...OPEN, WEBHOOK_ALLOW_PRIVATE: 'true' } })
  const owner = await register(app)
  const url = `${ntfy.origin.replace('//', '//user:ntfy-password@')}/a-topic`
  t.equal((await call(app, owner, 'PUT', '/api/me/notifications', { channels: [{ type: 'ntfy', url }] })).statusCode, 200)
  t.equal((await call(app, owner, 'GET', '/api/me/notifications')).json().channels[0].url, url, 'the user\'s session reads the channel')
  for (const scope of ['read', 'write'] as const) {
    const { token } = await makeToken(app, owner, { name: scope, scope })
    const read = await withToken(app, token, 'GET', '/api/me/notifications')
    t.equal(read.statusCode, 403, `a ${scope} token cannot read them`)
    t.same(read.json(), { error: 'Access denied', code: 'FORBIDDEN', details: {} })
    t.notOk(read.body.includes('ntfy-password'))
    const put = await withToken(app, token, 'PUT', '/api/me/notifications', { channels: [] })
    t.equal(put.statusCode, 403, `nor can a ${scope} token replace them`)
  }
  t.equal((await app.sql`select count(*)::int as n from notification_channels`)[0].n, 1, 'the channel is still there')
})

t.test('a token bound to a family sees that family alone', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const home = familyOf(owner)
  const other = await register(app)
  const away = familyOf(other)
  await join(app, other, away, owner, 'member')
  const homeChild = await child(app, owner, home, 'Home')
  const awayChild = await child(app, other, away, 'Away')
  const all = await makeToken(app, owner, { name: 'all', scope: 'write' })
  const bound = await makeToken(app, owner, { name: 'home only', scope: 'write', familyId: home })

  t.same((await withToken(app, all.token, 'GET', '/api/families')).json().data.map((f: { id: number }) => f.id), [home, away])
  const families = await withToken(app, bound.token, 'GET', '/api/families')
  t.same(families.json().data.map((f: { id: number }) => f.id), [home], 'the families list shows its family')
  t.equal(families.json().meta.total, 1)
  t.not(families.headers.etag, (await withToken(app, all.token, 'GET', '/api/families')).headers.etag, 'with an ETag of its own')
  t.same((await withToken(app, bound.token, 'GET', '/api/me')).json().families.map((f: { id: number }) => f.id), [home], 'and so does the profile')
  t.same((await withToken(app, bound.token, 'GET', '/api/children')).json().data.map((c: { id: number }) => c.id), [homeChild], 'and the children list')

  for (const [method, url, body] of [
    ['GET', `/api/families/${away}`, undefined],
    ['GET', `/api/children/${awayChild}`, undefined],
    ['GET', `/api/children/${awayChild}/measurements`, undefined],
    ['GET', `/api/children?familyId=${away}`, undefined],
    ['POST', `/api/children/${awayChild}/measurements`, { measuredAt: '2022-01-01', weightKg: 9 }],
    ['POST', '/api/children', { name: 'New', dateOfBirth: '2021-01-01', sex: 'male', familyId: away }],
    ['POST', '/api/me/calendar-feeds', { familyId: away }],
    ['POST', '/api/families', { name: 'Another' }]
  ] as const) {
    const res = await withToken(app, bound.token, method, url, body)
    t.equal(res.statusCode, 403, `${method} ${url}: as a non-member`)
    t.notOk(res.body.includes('Away'), 'nothing of the other family')
  }
  t.equal((await app.sql`select count(*)::int as n from measurements`)[0].n, 0, 'nothing was written')

  const made = await withToken(app, bound.token, 'POST', '/api/children', { name: 'Third', dateOfBirth: '2021-01-01', sex: 'male' })
  t.equal(made.statusCode, 201, 'without familyId, its family is the only one the token has')
  t.equal(made.json().familyId, home)
  t.equal((await withToken(app, bound.token, 'POST', `/api/children/${homeChild}/measurements`, { measuredAt: '2022-01-01', weightKg: 9 })).statusCode, 201)

  const feed = await call(app, owner, 'POST', '/api/me/calendar-feeds', { familyId: away })
  t.same((await withToken(app, bound.token, 'GET', '/api/me/calendar-feeds')).json().data, [], 'a feed of another family is not listed')
  t.equal((await withToken(app, bound.token, 'DELETE', `/api/me/calendar-feeds/${feed.json().id}`)).statusCode, 404, 'nor deleted')

  // A member removed from the token's family: refused on the next request.
  t.equal((await call(app, other, 'DELETE', `/api/families/${away}/members/${owner.user.id}`)).statusCode, 204)
  t.equal((await withToken(app, all.token, 'GET', `/api/children/${awayChild}`)).statusCode, 403, 'a removed member\'s token is refused')
})

t.test('a token ends with its expiry, its family and its account, not with a password change', async t => {
  const app = await build(t, { env: OPEN })
  const admin = await register(app)
  const owner = await register(app)
  const familyId = familyOf(owner)
  const childId = await child(app, owner, familyId)
  const expiring = await makeToken(app, owner, { name: 'soon', scope: 'read', expiresAt: new Date(Date.now() + 60_000).toISOString() })
  const bound = await makeToken(app, owner, { name: 'bound', scope: 'read', familyId })
  const free = await makeToken(app, owner, { name: 'free', scope: 'read' })

  t.equal((await call(app, owner, 'POST', '/api/me/password', { currentPassword: PASSWORD, newPassword: 'another fine password' })).statusCode, 204)
  t.equal((await withToken(app, free.token, 'GET', `/api/children/${childId}`)).statusCode, 200, 'a password change leaves tokens alone')

  await app.sql`update sessions set expires_at = now() - interval '1 second' where id = ${expiring.id}`
  const expired = await withToken(app, expiring.token, 'GET', '/api/me')
  t.equal(expired.statusCode, 401, 'an expired token is refused')
  t.equal((await withToken(app, expiring.token, 'GET', `/api/children/${childId}`)).statusCode, 401, 'on the one-statement reads too')
  t.equal(Date.parse((await call(app, owner, 'GET', '/api/me/tokens')).json().data[0].expiresAt) < Date.now(), true, 'and still listed, expired')

  t.equal((await call(app, owner, 'DELETE', `/api/children/${childId}`)).statusCode, 204)
  t.equal((await call(app, owner, 'DELETE', `/api/families/${familyId}`)).statusCode, 204)
  t.equal((await withToken(app, bound.token, 'GET', '/api/me')).statusCode, 401, 'a token goes with its family')

  t.equal((await call(app, admin, 'PATCH', `/api/admin/users/${owner.user.id}`, { disabled: true })).statusCode, 200)
  t.equal((await withToken(app, free.token, 'GET', '/api/me')).statusCode, 401, 'a disabled account\'s tokens are refused')
  t.equal((await call(app, admin, 'PATCH', `/api/admin/users/${owner.user.id}`, { disabled: false })).statusCode, 200)
  t.equal((await withToken(app, free.token, 'GET', '/api/me')).statusCode, 401, 'for good, like its sessions')

  t.equal((await withToken(app, 'cht_' + 'A'.repeat(43), 'GET', '/api/me')).statusCode, 401, 'an unknown token')
  t.equal((await withToken(app, 'cht_short', 'GET', '/api/me')).statusCode, 401, 'a malformed one')
})

t.test('a token\'s last use is written at most once a minute', async t => {
  const app = await build(t)
  const owner = await register(app)
  const { id, token } = await makeToken(app, owner, { name: 'script', scope: 'read' })
  const lastUsed = async () => (await app.sql`select last_used_at, xmin::text as xmin from sessions where id = ${id}`)[0]
  await withToken(app, token, 'GET', '/api/me')
  const first = await lastUsed()
  for (let i = 0; i < 5; i++) t.equal((await withToken(app, token, 'GET', '/api/me')).statusCode, 200)
  const still = await lastUsed()
  t.same(still, first, 'five more requests within the minute write nothing')
  await app.sql`update sessions set last_used_at = last_used_at - interval '2 minutes' where id = ${id}`
  await withToken(app, token, 'GET', '/api/me')
  t.ok((await lastUsed()).last_used_at > first.last_used_at, 'a minute later the next request moves it')
})

t.test('a user deleted with tokens', async t => {
  const app = await build(t, { env: OPEN })
  const admin = await register(app)
  const user = await register(app)
  const { token } = await makeToken(app, user, { name: 'x', scope: 'write', familyId: familyOf(user) })
  t.equal((await call(app, admin, 'DELETE', `/api/admin/users/${user.user.id}`)).statusCode, 204)
  t.equal((await withToken(app, token, 'GET', '/api/me')).statusCode, 401)
})
