import t from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { createSigner } from 'fast-jwt'
import { build, bearer, login, register, PASSWORD, TEST_ENV, type App } from './helper'

const OPEN = { REGISTRATION: 'open' }

function decode (token: string): Record<string, any> {
  return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString())
}

async function me (app: App, token: string) {
  return app.inject({ method: 'GET', url: '/api/me', headers: bearer(token) })
}

async function refresh (app: App, refreshToken: string) {
  return app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken } })
}

/** An invite as the invites routes store it: only the token's hash, made by an owner of the family. */
async function invite (app: App, familyId: number, email: string, role = 'member', expires = "now() + interval '7 days'") {
  const token = randomBytes(24).toString('base64url')
  const hash = createHash('sha256').update(token).digest('hex')
  await app.sql.unsafe(
    `insert into invites (family_id, email, role, token_hash, invited_by, expires_at)
     values ($1, $2, $3, $4, (select min(user_id) from family_members where family_id = $1 and role = 'owner'), ${expires})`,
    [familyId, email, role, hash]
  )
  return token
}

t.test('the first user becomes admin and gets a family of their own', async t => {
  const app = await build(t)
  const res = await app.inject({
    method: 'POST',
    url: '/api/auth/register',
    headers: { 'user-agent': 'tests' },
    payload: { email: '  Ada@Example.org ', password: PASSWORD, name: ' Ada ' }
  })
  t.equal(res.statusCode, 201)
  const pair = res.json()
  t.same(Object.keys(pair).sort(), ['accessToken', 'expiresIn', 'refreshExpiresIn', 'refreshToken', 'tokenType', 'user'])
  t.equal(pair.tokenType, 'Bearer')
  t.equal(pair.expiresIn, 900)
  t.equal(pair.refreshExpiresIn, 604800)
  t.same(Object.keys(pair.user).sort(), ['createdAt', 'email', 'id', 'name', 'role'])
  t.equal(pair.user.email, 'Ada@Example.org', 'stored as given, trimmed')
  t.equal(pair.user.name, 'Ada')
  t.equal(pair.user.role, 'admin')
  t.match(pair.user.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/)

  const claims = decode(pair.accessToken)
  t.equal(claims.sub, String(pair.user.id))
  t.equal(claims.role, 'admin')
  t.equal(typeof claims.sid, 'number')
  t.equal(claims.exp - claims.iat, 900)
  t.equal(JSON.parse(Buffer.from(pair.accessToken.split('.')[0], 'base64url').toString()).alg, 'HS256')

  const profile = (await me(app, pair.accessToken)).json()
  t.equal(profile.families.length, 1)
  t.equal(profile.families[0].role, 'owner')
  t.equal(profile.families[0].name, "Ada's family")
  t.same(claims.families, [profile.families[0].id], 'the token carries the family ids')

  const [row] = await app.sql`select password_hash, email from users`
  t.match(row.password_hash, /^\$2[aby]\$04\$/, 'a bcrypt hash at BCRYPT_COST')
  t.notMatch(res.body, /\$2[aby]\$/, 'no hash in the response')
  const [stored] = await app.sql`select token_hash from refresh_tokens`
  t.equal(stored.token_hash, createHash('sha256').update(pair.refreshToken).digest('hex'), 'only a hash of the refresh token is stored')
  t.notMatch(res.body, new RegExp(stored.token_hash))
})

t.test('two first registrations at once still make one admin', async t => {
  const app = await build(t, { env: OPEN })
  const results = await Promise.all([1, 2, 3].map(i => app.inject({
    method: 'POST', url: '/api/auth/register', payload: { email: `race${i}@example.org`, password: PASSWORD, name: `Racer ${i}` }
  })))
  t.same(results.map(res => res.statusCode), [201, 201, 201])
  t.equal(results.filter(res => res.json().user.role === 'admin').length, 1)
  const [{ admins }] = await app.sql`select count(*) filter (where role = 'admin') as admins from users`
  t.equal(admins, 1)
})

t.test('registration modes', async t => {
  t.test('invite (the default): only with a valid invite', async t => {
    const app = await build(t)
    const owner = await register(app)
    const familyId = decode(owner.accessToken).families[0]
    const noToken = await app.inject({ method: 'POST', url: '/api/auth/register', payload: { email: 'b@example.org', password: PASSWORD, name: 'B' } })
    t.equal(noToken.statusCode, 403)
    t.equal(noToken.json().code, 'REGISTRATION_CLOSED')

    const badToken = await app.inject({ method: 'POST', url: '/api/auth/register', payload: { email: 'b@example.org', password: PASSWORD, name: 'B', inviteToken: 'nope' } })
    t.equal(badToken.statusCode, 400)
    t.same(badToken.json(), { error: 'The invite is not valid', code: 'INVITE_INVALID', details: {} })

    const forOther = await invite(app, familyId, 'someone@example.org')
    const wrongEmail = await app.inject({ method: 'POST', url: '/api/auth/register', payload: { email: 'b@example.org', password: PASSWORD, name: 'B', inviteToken: forOther } })
    t.equal(wrongEmail.json().code, 'INVITE_INVALID', 'an invite for another e-mail')

    const expired = await invite(app, familyId, 'b@example.org', 'member', "now() - interval '1 second'")
    const late = await app.inject({ method: 'POST', url: '/api/auth/register', payload: { email: 'b@example.org', password: PASSWORD, name: 'B', inviteToken: expired } })
    t.equal(late.json().code, 'INVITE_INVALID', 'an expired invite')

    const token = await invite(app, familyId, 'B@EXAMPLE.org', 'viewer')
    const joined = await app.inject({ method: 'POST', url: '/api/auth/register', payload: { email: 'b@example.org', password: PASSWORD, name: 'B', inviteToken: token } })
    t.equal(joined.statusCode, 201, 'the invite e-mail matches case-insensitively')
    t.equal(joined.json().user.role, 'user')
    const profile = (await me(app, joined.json().accessToken)).json()
    t.same(profile.families.map((f: any) => [f.id, f.role]), [[familyId, 'viewer']], 'joins the invite\'s family in its role, no family of its own')
    const [used] = await app.sql`select used_at, used_by from invites where token_hash = ${createHash('sha256').update(token).digest('hex')}`
    t.ok(used.used_at, 'the invite is used up')
    t.equal(used.used_by, joined.json().user.id)

    const again = await app.inject({ method: 'POST', url: '/api/auth/register', payload: { email: 'c@example.org', password: PASSWORD, name: 'C', inviteToken: token } })
    t.equal(again.json().code, 'INVITE_INVALID', 'a used invite')
  })

  t.test('a taken e-mail is checked last', async t => {
    const app = await build(t)
    const owner = await register(app, { email: 'taken@example.org' })
    const familyId = decode(owner.accessToken).families[0]
    const token = await invite(app, familyId, 'TAKEN@example.org')
    const res = await app.inject({ method: 'POST', url: '/api/auth/register', payload: { email: 'TAKEN@example.org', password: PASSWORD, name: 'Again', inviteToken: token } })
    t.equal(res.statusCode, 409)
    t.equal(res.json().code, 'EMAIL_TAKEN')
    const [open] = await app.sql`select used_at from invites`
    t.equal(open.used_at, null, 'the invite stays open')
  })

  t.test('closed: nobody after the first, not even with an invite', async t => {
    const app = await build(t, { env: { REGISTRATION: 'closed' } })
    const first = await register(app)
    t.equal(first.user.role, 'admin', 'the first user can always register')
    const token = await invite(app, decode(first.accessToken).families[0], 'd@example.org')
    const res = await app.inject({ method: 'POST', url: '/api/auth/register', payload: { email: 'd@example.org', password: PASSWORD, name: 'D', inviteToken: token } })
    t.equal(res.statusCode, 403)
    t.same(res.json(), { error: 'Registration is closed', code: 'REGISTRATION_CLOSED', details: {} })
  })

  t.test('open: anyone, with a family of their own', async t => {
    const app = await build(t, { env: OPEN })
    await register(app)
    const second = await register(app, { name: 'Bo' })
    t.equal(second.user.role, 'user')
    const profile = (await me(app, second.accessToken)).json()
    t.same(profile.families.map((f: any) => [f.name, f.role]), [["Bo's family", 'owner']])
    const bad = await app.inject({ method: 'POST', url: '/api/auth/register', payload: { email: 'e@example.org', password: PASSWORD, name: 'E', inviteToken: 'wrong' } })
    t.equal(bad.json().code, 'INVITE_INVALID', 'a bad invite is refused in open mode too')
  })
})

t.test('registration input', async t => {
  const app = await build(t, { env: OPEN })
  await register(app, { email: 'first@example.org' })
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['a bad e-mail', { email: 'not-an-email' }, '/body/email'],
    ['a 7-byte password', { password: '1234567' }, '/body/password'],
    ['a 73-byte password', { password: 'x'.repeat(73) }, '/body/password'],
    ['a 74-byte password of 37 characters', { password: 'é'.repeat(37) }, '/body/password'],
    ['an empty name', { name: '   ' }, '/body/name'],
    ['a 101-character name', { name: 'n'.repeat(101) }, '/body/name'],
    ['an unknown field', { role: 'admin' }, '/body/role'],
    ['a number for the e-mail', { email: 5 }, '/body/email']
  ]
  for (const [label, change, path] of cases) {
    const res = await app.inject({ method: 'POST', url: '/api/auth/register', payload: { email: 'new@example.org', password: PASSWORD, name: 'New', ...change } })
    t.equal(res.statusCode, 400, label)
    t.equal(res.json().code, 'VALIDATION_ERROR')
    t.ok(res.json().details.issues.some((issue: any) => issue.path === path), `${label}: names ${path}`)
  }
  const longest = await app.inject({ method: 'POST', url: '/api/auth/register', payload: { email: 'long@example.org', password: 'x'.repeat(72), name: 'n'.repeat(100) } })
  t.equal(longest.statusCode, 201, '72 bytes and 100 characters are accepted')
  await login(app, 'long@example.org', 'x'.repeat(72))
  const cut = await app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'long@example.org', password: 'x'.repeat(72) + 'y' } })
  t.equal(cut.statusCode, 400, 'a longer password is refused, not silently cut to the stored one')

  const spaced = await app.inject({ method: 'POST', url: '/api/auth/register', payload: { email: 'spaces@example.org', password: '  spaced pass  ', name: 'S' } })
  t.equal(spaced.statusCode, 201)
  await login(app, 'spaces@example.org', '  spaced pass  ')
  const trimmed = await app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'spaces@example.org', password: 'spaced pass' } })
  t.equal(trimmed.statusCode, 401, 'passwords are never trimmed')

  const taken = await app.inject({ method: 'POST', url: '/api/auth/register', payload: { email: 'FIRST@example.org', password: PASSWORD, name: 'Dup' } })
  t.equal(taken.statusCode, 409)
  t.equal(taken.json().code, 'EMAIL_TAKEN')
})

t.test('login', async t => {
  const app = await build(t, { env: OPEN })
  const ada = await register(app, { email: 'ada@example.org' })
  const pair = await login(app, 'ADA@example.org')
  t.equal(pair.user.id, ada.user.id, 'e-mail compared case-insensitively')
  t.not(decode(pair.accessToken).sid, decode(ada.accessToken).sid, 'each login is a session of its own')

  const wrong = await app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'ada@example.org', password: 'wrong password' } })
  const unknown = await app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'nobody@example.org', password: 'wrong password' } })
  t.equal(wrong.statusCode, 401)
  t.equal(unknown.statusCode, 401)
  t.same(wrong.json(), unknown.json(), 'unknown e-mail and wrong password answer alike')
  t.equal(wrong.json().code, 'INVALID_CREDENTIALS')
  t.equal(wrong.headers['www-authenticate'], 'Bearer')

  const time = async (email: string) => {
    const started = process.hrtime.bigint()
    await app.inject({ method: 'POST', url: '/api/auth/login', payload: { email, password: 'wrong password' } })
    return Number(process.hrtime.bigint() - started) / 1e6
  }
  const known: number[] = []
  const none: number[] = []
  for (let i = 0; i < 3; i++) {
    known.push(await time('ada@example.org'))
    none.push(await time(`nobody${i}@example.org`))
  }
  const median = (values: number[]) => values.sort((a, b) => a - b)[1]
  t.ok(median(none) > median(known) * 0.3, `an unknown e-mail also pays for a bcrypt comparison (${median(none).toFixed(0)} ms vs ${median(known).toFixed(0)} ms)`)

  await app.sql`update users set disabled = true where id = ${ada.user.id}`
  const disabled = await app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'ada@example.org', password: PASSWORD } })
  t.equal(disabled.statusCode, 403)
  t.equal(disabled.json().code, 'ACCOUNT_DISABLED')
  const disabledWrong = await app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'ada@example.org', password: 'wrong password' } })
  t.equal(disabledWrong.json().code, 'INVALID_CREDENTIALS', 'a wrong password reveals nothing about the account')
  const meDisabled = await me(app, pair.accessToken)
  t.equal(meDisabled.statusCode, 403, 'a disabled account is refused at once, even with a live token')
  t.equal(meDisabled.json().code, 'ACCOUNT_DISABLED')
})

t.test('access tokens that are refused', async t => {
  const app = await build(t, { env: OPEN })
  const pair = await register(app)
  t.equal((await me(app, pair.accessToken)).statusCode, 200)
  const claims = decode(pair.accessToken)
  const payload = { sub: claims.sub, sid: claims.sid, role: 'admin', families: claims.families }

  const otherSecret = createSigner({ key: TEST_ENV.JWT_REFRESH_SECRET, algorithm: 'HS256', expiresIn: 60000 })(payload)
  const expired = createSigner({ key: TEST_ENV.JWT_SECRET, algorithm: 'HS256', expiresIn: 1000, clockTimestamp: Date.now() - 3600_000 })(payload)
  const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${Buffer.from(JSON.stringify({ ...payload, iat: Math.floor(Date.now() / 1000) })).toString('base64url')}.`
  const hs512 = createSigner({ key: TEST_ENV.JWT_SECRET, algorithm: 'HS512', expiresIn: 60000 })(payload)
  const noSession = createSigner({ key: TEST_ENV.JWT_SECRET, algorithm: 'HS256', expiresIn: 60000 })({ ...payload, sid: 999999 })
  const otherUsersSession = createSigner({ key: TEST_ENV.JWT_SECRET, algorithm: 'HS256', expiresIn: 60000 })({ ...payload, sub: '999' })

  const cases: Array<[string, Record<string, string>, string]> = [
    ['no token', {}, 'UNAUTHORIZED'],
    ['not a bearer token', { authorization: `Basic ${pair.accessToken}` }, 'UNAUTHORIZED'],
    ['garbage', bearer('garbage'), 'UNAUTHORIZED'],
    ['signed with the other secret', bearer(otherSecret), 'UNAUTHORIZED'],
    ['the refresh token', bearer(pair.refreshToken), 'UNAUTHORIZED'],
    ['alg none', bearer(none), 'UNAUTHORIZED'],
    ['HS512', bearer(hs512), 'UNAUTHORIZED'],
    ['expired', bearer(expired), 'TOKEN_EXPIRED'],
    ['an unknown session', bearer(noSession), 'UNAUTHORIZED'],
    ['a session of another user', bearer(otherUsersSession), 'UNAUTHORIZED']
  ]
  for (const [label, headers, code] of cases) {
    const res = await app.inject({ method: 'GET', url: '/api/me', headers })
    t.equal(res.statusCode, 401, label)
    t.equal(res.json().code, code, label)
    t.equal(res.headers['www-authenticate'], 'Bearer', `${label}: WWW-Authenticate`)
  }

  const asRefresh = await refresh(app, pair.accessToken)
  t.equal(asRefresh.statusCode, 401)
  t.equal(asRefresh.json().code, 'REFRESH_TOKEN_INVALID', 'an access token is no refresh token')
  const expiredRefresh = createSigner({ key: TEST_ENV.JWT_REFRESH_SECRET, algorithm: 'HS256', expiresIn: 1000, clockTimestamp: Date.now() - 3600_000 })({ sub: claims.sub, sid: claims.sid })
  t.equal((await refresh(app, expiredRefresh)).json().code, 'REFRESH_TOKEN_INVALID', 'an expired refresh token')
  const unknownRefresh = createSigner({ key: TEST_ENV.JWT_REFRESH_SECRET, algorithm: 'HS256', expiresIn: 60000 })({ sub: claims.sub, sid: claims.sid, jti: 'x' })
  t.equal((await refresh(app, unknownRefresh)).json().code, 'REFRESH_TOKEN_INVALID', 'a well-signed but unknown refresh token')
})

t.test('an access token expires after ACCESS_TOKEN_TTL', async t => {
  // Three seconds: a token's expiry counts in whole seconds, so one of a one-second lifetime may expire at once.
  const app = await build(t, { env: { ...OPEN, ACCESS_TOKEN_TTL: '3' } })
  const pair = await register(app)
  t.equal(pair.expiresIn, 3)
  t.equal((await me(app, pair.accessToken)).statusCode, 200)
  await new Promise(resolve => setTimeout(resolve, 4100))
  const res = await me(app, pair.accessToken)
  t.equal(res.statusCode, 401)
  t.equal(res.json().code, 'TOKEN_EXPIRED')
  const renewed = await refresh(app, pair.refreshToken)
  t.equal(renewed.statusCode, 200, 'the refresh token still works')
  t.equal((await me(app, renewed.json().accessToken)).statusCode, 200)
})

t.test('refresh rotates the pair', async t => {
  const app = await build(t, { env: OPEN })
  const first = await register(app)
  const res = await refresh(app, first.refreshToken)
  t.equal(res.statusCode, 200)
  const second = res.json()
  t.not(second.refreshToken, first.refreshToken)
  t.equal(second.user.id, first.user.id)
  t.equal(decode(second.accessToken).sid, decode(first.accessToken).sid, 'the same session')
  const [link] = await app.sql`
    select n.replaces_id = o.id as linked from refresh_tokens n join refresh_tokens o on o.token_hash = ${createHash('sha256').update(first.refreshToken).digest('hex')}
    where n.token_hash = ${createHash('sha256').update(second.refreshToken).digest('hex')}
  `
  t.ok(link.linked, 'the new token knows the one it replaced')

  const replay = await refresh(app, first.refreshToken)
  t.equal(replay.statusCode, 401)
  t.equal(replay.json().code, 'REFRESH_TOKEN_INVALID', 'within the grace the old token is only refused')
  const third = await refresh(app, second.refreshToken)
  t.equal(third.statusCode, 200, 'and nothing was revoked')
  t.equal((await me(app, third.json().accessToken)).statusCode, 200)
})

t.test('reuse after the grace revokes the whole session', async t => {
  const app = await build(t, { env: { ...OPEN, REFRESH_REUSE_GRACE: '1' } })
  const first = await register(app)
  const other = await login(app, first.user.email)
  const second = (await refresh(app, first.refreshToken)).json()
  const third = (await refresh(app, second.refreshToken)).json()
  await new Promise(resolve => setTimeout(resolve, 1200))

  const reuse = await refresh(app, first.refreshToken)
  t.equal(reuse.statusCode, 401)
  t.equal(reuse.json().code, 'REFRESH_TOKEN_REUSED')
  t.equal((await refresh(app, third.refreshToken)).json().code, 'REFRESH_TOKEN_INVALID', 'the newest descendant is revoked too')
  t.equal((await me(app, third.accessToken)).statusCode, 401, 'and the session\'s access token at once')
  t.equal((await me(app, other.accessToken)).statusCode, 200, 'another session of the user lives on')
  t.equal((await refresh(app, other.refreshToken)).statusCode, 200)
})

t.test('two refreshes with one token at once: exactly one succeeds', async t => {
  const app = await build(t, { env: OPEN })
  const pair = await register(app)
  const results = await Promise.all(Array.from({ length: 6 }, () => refresh(app, pair.refreshToken)))
  const ok = results.filter(res => res.statusCode === 200)
  t.equal(ok.length, 1)
  t.ok(results.filter(res => res.statusCode !== 200).every(res => res.json().code === 'REFRESH_TOKEN_INVALID'))
  const next = await refresh(app, ok[0].json().refreshToken)
  t.equal(next.statusCode, 200, 'the session lives on')
})

t.test('logout ends the session at once', async t => {
  const app = await build(t, { env: OPEN })
  const a = await register(app, { email: 'a@example.org' })
  const a2 = await login(app, 'a@example.org')
  const a3 = await login(app, 'a@example.org')
  const b = await register(app, { email: 'b@example.org' })

  const unauthenticated = await app.inject({ method: 'POST', url: '/api/auth/logout' })
  t.equal(unauthenticated.statusCode, 401)

  const res = await app.inject({ method: 'POST', url: '/api/auth/logout', headers: bearer(a.accessToken), payload: { refreshToken: a2.refreshToken } })
  t.equal(res.statusCode, 204)
  t.equal(res.body, '')
  t.equal((await me(app, a.accessToken)).statusCode, 401, 'its access token is refused')
  t.equal((await refresh(app, a.refreshToken)).json().code, 'REFRESH_TOKEN_INVALID', 'and its refresh token')
  t.equal((await me(app, a2.accessToken)).statusCode, 401, 'the given refresh token\'s session ends too')
  t.equal((await me(app, a3.accessToken)).statusCode, 200, 'other sessions live on')

  const foreign = await app.inject({ method: 'POST', url: '/api/auth/logout', headers: bearer(a3.accessToken), payload: { refreshToken: b.refreshToken } })
  t.equal(foreign.statusCode, 204)
  t.equal((await me(app, b.accessToken)).statusCode, 200, 'another user\'s session is not touched')

  const empty = await app.inject({ method: 'POST', url: '/api/auth/logout', headers: { ...bearer(b.accessToken), 'content-type': 'application/json' }, payload: '' })
  t.equal(empty.statusCode, 204, 'an empty JSON body is accepted')
})

t.test('the current user', async t => {
  const app = await build(t, { env: OPEN })
  const a = await register(app, { email: 'a@example.org', name: 'Ada' })
  await register(app, { email: 'b@example.org' })

  const patched = await app.inject({ method: 'PATCH', url: '/api/me', headers: bearer(a.accessToken), payload: { name: ' Ada L. ' } })
  t.equal(patched.statusCode, 200)
  const { preferences, families, ...user } = patched.json()
  t.same(user, { ...a.user, name: 'Ada L.' }, 'the user as GET /api/me answers them')
  t.same(preferences, { units: 'metric', language: 'en', timeZone: 'UTC' })
  t.same(families.map((family: { role: string }) => family.role), ['owner'])
  const email = await app.inject({ method: 'PATCH', url: '/api/me', headers: bearer(a.accessToken), payload: { email: 'ada@example.org' } })
  t.equal(email.json().email, 'ada@example.org')
  t.equal(email.json().name, 'Ada L.', 'an omitted field is kept')
  const same = await app.inject({ method: 'PATCH', url: '/api/me', headers: bearer(a.accessToken), payload: { email: 'ADA@example.org' } })
  t.equal(same.statusCode, 200, 'one\'s own e-mail in another case is not taken')
  const taken = await app.inject({ method: 'PATCH', url: '/api/me', headers: bearer(a.accessToken), payload: { email: 'B@example.org' } })
  t.equal(taken.statusCode, 409)
  t.equal(taken.json().code, 'EMAIL_TAKEN')
  for (const payload of [{ name: null }, { name: '' }, { role: 'admin' }, { email: 'nope' }]) {
    const res = await app.inject({ method: 'PATCH', url: '/api/me', headers: bearer(a.accessToken), payload })
    t.equal(res.statusCode, 400, JSON.stringify(payload))
  }
  const profile = await me(app, a.accessToken)
  t.same(Object.keys(profile.json()).sort(), ['createdAt', 'email', 'families', 'id', 'name', 'preferences', 'role'])
  t.equal(profile.json().role, 'admin')
})

t.test('changing the password revokes every other session', async t => {
  const app = await build(t, { env: OPEN })
  const a = await register(app, { email: 'a@example.org' })
  const other = await login(app, 'a@example.org')

  const wrong = await app.inject({ method: 'POST', url: '/api/me/password', headers: bearer(a.accessToken), payload: { currentPassword: 'not it at all', newPassword: 'a new password' } })
  t.equal(wrong.statusCode, 403)
  t.equal(wrong.json().code, 'WRONG_PASSWORD')
  const short = await app.inject({ method: 'POST', url: '/api/me/password', headers: bearer(a.accessToken), payload: { currentPassword: PASSWORD, newPassword: 'short' } })
  t.equal(short.statusCode, 400)
  const long = await app.inject({ method: 'POST', url: '/api/me/password', headers: bearer(a.accessToken), payload: { currentPassword: PASSWORD, newPassword: 'x'.repeat(73) } })
  t.equal(long.statusCode, 400)

  const res = await app.inject({ method: 'POST', url: '/api/me/password', headers: bearer(a.accessToken), payload: { currentPassword: PASSWORD, newPassword: 'a new password' } })
  t.equal(res.statusCode, 204)
  t.equal((await me(app, other.accessToken)).statusCode, 401, 'another session is refused at once')
  t.equal((await refresh(app, other.refreshToken)).statusCode, 401)
  t.equal((await me(app, a.accessToken)).statusCode, 200, 'the current session lives on')
  await login(app, 'a@example.org', 'a new password')
  const old = await app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'a@example.org', password: PASSWORD } })
  t.equal(old.statusCode, 401, 'the old password no longer works')
})

t.test('sessions: list and delete one\'s own', async t => {
  const app = await build(t, { env: OPEN })
  const a = await register(app, { email: 'a@example.org' })
  const second = await app.inject({ method: 'POST', url: '/api/auth/login', headers: { 'user-agent': 'Phone' }, payload: { email: 'a@example.org', password: PASSWORD } })
  const phone = second.json()
  const b = await register(app, { email: 'b@example.org' })

  const list = await app.inject({ method: 'GET', url: '/api/me/sessions', headers: bearer(a.accessToken) })
  t.equal(list.statusCode, 200)
  const body = list.json()
  t.same(body.meta, { total: 2, limit: 50, offset: 0 })
  t.same(body.data.map((s: any) => s.current), [true, false])
  t.same(Object.keys(body.data[0]).sort(), ['createdAt', 'current', 'id', 'lastUsedAt', 'userAgent'])
  t.equal(body.data[1].userAgent, 'Phone')

  const page = await app.inject({ method: 'GET', url: '/api/me/sessions?limit=1&offset=1', headers: bearer(a.accessToken) })
  t.same(page.json().meta, { total: 2, limit: 1, offset: 1 })
  t.equal(page.json().data[0].id, body.data[1].id)

  const before = body.data[1].lastUsedAt
  await new Promise(resolve => setTimeout(resolve, 20))
  const rotated = (await refresh(app, phone.refreshToken)).json()
  const after = (await app.inject({ method: 'GET', url: '/api/me/sessions', headers: bearer(a.accessToken) })).json().data[1].lastUsedAt
  t.ok(Date.parse(after) > Date.parse(before), 'lastUsedAt moves on refresh')

  const bSession = decode(b.accessToken).sid
  const foreign = await app.inject({ method: 'DELETE', url: `/api/me/sessions/${bSession}`, headers: bearer(a.accessToken) })
  t.equal(foreign.statusCode, 404, 'another user\'s session is a 404')
  t.equal(foreign.json().code, 'NOT_FOUND')
  t.equal((await me(app, b.accessToken)).statusCode, 200)

  const del = await app.inject({ method: 'DELETE', url: `/api/me/sessions/${body.data[1].id}`, headers: bearer(a.accessToken) })
  t.equal(del.statusCode, 204)
  t.equal((await me(app, rotated.accessToken)).statusCode, 401, 'its access token is refused at once')
  t.equal((await refresh(app, rotated.refreshToken)).statusCode, 401)
  const remaining = (await app.inject({ method: 'GET', url: '/api/me/sessions', headers: bearer(a.accessToken) })).json()
  t.same(remaining.data.map((s: any) => s.id), [body.data[0].id])
  const bad = await app.inject({ method: 'DELETE', url: '/api/me/sessions/abc', headers: bearer(a.accessToken) })
  t.equal(bad.statusCode, 400)
})

t.test('rate limits on the auth routes', async t => {
  const app = await build(t, { env: { ...OPEN, AUTH_RATE_LIMIT_MAX: '3', AUTH_RATE_LIMIT_WINDOW: '4', TRUST_PROXY: 'true' } })
  const a = await register(app, { email: 'a@example.org' })
  const attempt = (ip = '203.0.113.5', email = 'a@example.org') => app.inject({
    method: 'POST', url: '/api/auth/login', headers: { 'x-forwarded-for': ip }, payload: { email, password: 'wrong password' }
  })
  t.same([(await attempt()).statusCode, (await attempt()).statusCode, (await attempt()).statusCode], [401, 401, 401], 'refused requests count too')
  const limited = await attempt()
  t.equal(limited.statusCode, 429)
  t.equal(limited.json().code, 'RATE_LIMITED')
  t.same(Object.keys(limited.json()).sort(), ['code', 'details', 'error'])
  t.ok(Number(limited.headers['retry-after']) >= 1, 'with Retry-After')
  const malformed = await app.inject({ method: 'POST', url: '/api/auth/login', headers: { 'x-forwarded-for': '203.0.113.5' }, payload: { nope: 1 } })
  t.equal(malformed.statusCode, 429, 'the limit is checked before the body')

  t.equal((await attempt('203.0.113.9', 'b@example.org')).statusCode, 401, 'another client address has its own bucket')
  t.equal((await attempt('203.0.113.9')).statusCode, 429, 'but the account has its own too, whatever the address')
  const register2 = await app.inject({ method: 'POST', url: '/api/auth/register', headers: { 'x-forwarded-for': '203.0.113.5' }, payload: { email: 'z@example.org', password: PASSWORD, name: 'Z' } })
  t.equal(register2.statusCode, 201, 'each route has its own bucket')
  t.equal((await me(app, a.accessToken)).statusCode, 200, 'other routes are not limited')
  t.equal((await app.inject({ method: 'GET', url: '/api/health', headers: { 'x-forwarded-for': '203.0.113.5' } })).statusCode, 200)

  await new Promise(resolve => setTimeout(resolve, 4100))
  t.equal((await attempt()).statusCode, 401, 'the limit recovers after the window')
})

t.test('tokens and passwords never reach the logs or the responses', async t => {
  const logs: string[] = []
  const app = await build(t, { env: { ...OPEN, LOG_LEVEL: 'trace' }, logs })
  const bodies: string[] = []
  const pair = await register(app, { email: 'secret@example.org', password: 'my very secret pw' })
  const refreshed = await refresh(app, pair.refreshToken)
  bodies.push(refreshed.body)
  bodies.push((await me(app, pair.accessToken)).body)
  bodies.push((await app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'secret@example.org', password: 'my very secret pw' } })).body)
  bodies.push((await app.inject({ method: 'POST', url: '/api/me/password', headers: bearer(refreshed.json().accessToken), payload: { currentPassword: 'wrong one here', newPassword: 'another secret pw' } })).body)
  await app.inject({ method: 'POST', url: '/api/auth/logout', headers: bearer(refreshed.json().accessToken), payload: { refreshToken: refreshed.json().refreshToken } })

  const hashes = (await app.sql`select token_hash from refresh_tokens`).map(row => row.token_hash)
  const [{ password_hash: passwordHash }] = await app.sql`select password_hash from users`
  const text = logs.join('\n')
  t.ok(logs.length > 5, 'the requests were logged')
  const secrets = ['my very secret pw', 'another secret pw', 'wrong one here', pair.accessToken, pair.refreshToken,
    refreshed.json().accessToken, refreshed.json().refreshToken, passwordHash, ...hashes]
  t.notOk(secrets.some(secret => text.includes(secret)), 'no password, token or hash is in the logs')
  const [pairBody, meBody, loginBody, passwordBody] = bodies
  for (const body of [meBody, passwordBody]) {
    t.notOk(secrets.some(secret => body.includes(secret)), 'responses other than token pairs hold no secret')
  }
  for (const body of [pairBody, loginBody]) {
    t.notOk([passwordHash, ...hashes, 'my very secret pw'].some(secret => body.includes(secret)), 'a token pair holds no password or hash')
  }
  t.notOk(bodies.some(body => /\$2[aby]\$/.test(body)), 'no response has a password hash')
})
