import t from 'tap'
import { createHash } from 'node:crypto'
import { bearer, build, login, PASSWORD, register } from './helper'
import { atProvider, callback, certified, exchange, invite, oidcEnv, ownLink, PUBLIC_URL, signIn, start } from './oidc-flow'
import { Browser, CLIENT, startForgingProvider, testTls, type Forgery } from './oidc-servers'

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

t.test('a first sign-in makes the first account an administrator; the code is exchanged once for a token pair', async t => {
  const provider = await certified(t, { alice: { email: 'alice@example.org', email_verified: true, name: 'Alice' } })
  const app = await build(t, { env: oidcEnv(provider) })
  t.same((await app.inject({ method: 'GET', url: '/api/auth/oidc' })).json(), { enabled: true, name: 'Pocket ID', passwordLogin: true })

  const begun = await start(app, '/children/7?tab=growth')
  t.equal(begun.res.statusCode, 302)
  const to = new URL(begun.location)
  t.equal(to.origin, provider.issuer, 'to the provider')
  t.equal(to.searchParams.get('code_challenge_method'), 'S256', 'with PKCE')
  t.match(to.searchParams.get('code_challenge'), /^[A-Za-z0-9_-]{43}$/)
  t.ok(to.searchParams.get('state'), 'a state')
  t.ok(to.searchParams.get('nonce'), 'a nonce')
  t.equal(to.searchParams.get('redirect_uri'), `${PUBLIC_URL}/api/auth/oidc/callback`)
  t.equal(to.searchParams.get('scope'), 'openid email profile')
  t.match(String(begun.res.headers['set-cookie']), /^oidc_browser=[A-Za-z0-9_-]{43}; Path=\/api\/auth\/oidc; Max-Age=600; HttpOnly; SameSite=Lax; Secure$/)
  const [flow] = await app.sql`select state_hash, code_verifier, nonce, redirect from oidc_flows`
  t.equal(flow.state_hash, sha256(to.searchParams.get('state') as string), 'only the state\'s hash is kept')
  t.equal(flow.redirect, '/children/7?tab=growth')

  const back = await atProvider(new Browser(provider.tls), begun.location, 'alice')
  const done = await callback(app, back, begun.cookie)
  t.equal(done.res.statusCode, 302)
  t.match(done.location, /^https:\/\/health\.example\.org\/children\/7\?tab=growth#oidcCode=[A-Za-z0-9_-]{43}$/, 'back to the front end with a one-time code in the fragment')
  t.notMatch(done.location, /accessToken|eyJ/, 'no token in the URL')
  const code = new URLSearchParams(new URL(done.location).hash.slice(1)).get('oidcCode')

  const pair = await exchange(app, code)
  t.equal(pair.statusCode, 200)
  t.same(Object.keys(pair.json()).sort(), ['accessToken', 'expiresIn', 'refreshExpiresIn', 'refreshToken', 'tokenType', 'user'], 'the usual token pair')
  t.match(pair.json().user, { email: 'alice@example.org', name: 'Alice', role: 'admin' }, 'the first user of the service is an administrator')
  const profile = (await app.inject({ method: 'GET', url: '/api/me', headers: bearer(pair.json().accessToken) })).json()
  t.equal(profile.families.length, 1, 'with a family of their own, as at registration')
  t.equal((await exchange(app, code)).json().code, 'OIDC_CODE_INVALID', 'a code is good once')
  const [identity] = await app.sql`select issuer, subject, user_id from user_identities`
  t.same(identity, { issuer: provider.issuer, subject: 'alice', user_id: pair.json().user.id })
  const [account] = await app.sql`select password_hash from users where id = ${pair.json().user.id}`
  t.equal(account.password_hash, null, 'an account made by the provider has no password')
  t.equal((await login(app, 'alice@example.org', PASSWORD).catch(error => error.message)).startsWith('login answered 401'), true, 'and none can sign in')

  provider.accounts.set('alice', { email: 'alice.new@example.org', email_verified: true, name: 'Alice' })
  const again = await signIn(app, provider, 'alice')
  const second = await exchange(app, again.fragment.get('oidcCode'))
  t.equal(second.json().user.id, pair.json().user.id, 'the next sign-in finds the account by issuer and subject, whatever its e-mail now')
  t.equal((await app.sql`select count(*)::int as n from users`)[0].n, 1)

  const late = await signIn(app, provider, 'alice')
  await app.sql`update oidc_codes set expires_at = now() - interval '1 second'`
  const expired = await exchange(app, late.fragment.get('oidcCode'))
  t.equal(expired.statusCode, 400)
  t.same(expired.json(), { error: 'The sign-in code is not valid: unknown, used or older than a minute', code: 'OIDC_CODE_INVALID', details: {} }, 'a code older than a minute')
  t.equal((await exchange(app, 'not-a-code')).json().code, 'OIDC_CODE_INVALID', 'an unknown code')
})

t.test('a first sign-in is never linked to an account by its e-mail, verified or not; otherwise the registration policy decides', async t => {
  const provider = await certified(t, {
    verified: { email: 'Bob@Example.org', email_verified: true, name: 'Bobby' },
    unverified: { email: 'carol@example.org', email_verified: false },
    newcomer: { email: 'dan@example.org', email_verified: true, name: 'Dan' },
    nameless: {},
    disabled: { email: 'erin@example.org', email_verified: true }
  })
  const app = await build(t, { env: oidcEnv(provider) })
  const admin = await register(app)
  const bob = await register(app, { email: 'bob@example.org', name: 'Bob', inviteToken: await invite(app, admin, 'bob@example.org') })
  await register(app, { email: 'carol@example.org', name: 'Carol', inviteToken: await invite(app, admin, 'carol@example.org') })
  const erin = await register(app, { email: 'erin@example.org', name: 'Erin', inviteToken: await invite(app, admin, 'erin@example.org') })
  await app.inject({ method: 'PATCH', url: `/api/admin/users/${erin.user.id}`, headers: bearer(admin.accessToken), payload: { disabled: true } })
  const users = async () => (await app.sql`select count(*)::int as n from users`)[0].n
  const before = await users()

  const matched = await signIn(app, provider, 'verified')
  t.equal(matched.location, `${PUBLIC_URL}/home#oidcError=ACCOUNT_EXISTS`, 'an e-mail the provider says is verified finds no account, in any case: it ends without a code')
  t.equal((await login(app, 'bob@example.org')).user.id, bob.user.id, 'the account keeps its password')
  t.equal((await signIn(app, provider, 'unverified')).fragment.get('oidcError'), 'ACCOUNT_EXISTS', 'nor an e-mail it does not vouch for')
  t.equal((await signIn(app, provider, 'disabled')).fragment.get('oidcError'), 'ACCOUNT_EXISTS', 'a disabled account\'s e-mail says no more')
  t.equal((await signIn(app, provider, 'newcomer')).fragment.get('oidcError'), 'REGISTRATION_CLOSED', 'no account for a newcomer while registration needs an invite')
  t.equal(await users(), before, 'no account was made')
  t.equal((await app.sql`select count(*)::int as n from user_identities`)[0].n, 0, 'none linked')
  t.equal((await app.sql`select count(*)::int as n from oidc_codes`)[0].n, 0, 'and no code given')

  const open = await build(t, { env: oidcEnv(provider, { REGISTRATION: 'open' }) })
  await register(open)
  await register(open, { email: 'carol@example.org' })
  t.equal((await signIn(open, provider, 'unverified')).fragment.get('oidcError'), 'ACCOUNT_EXISTS', 'open registration makes no second account of an e-mail')
  t.equal((await signIn(open, provider, 'nameless')).fragment.get('oidcError'), 'OIDC_EMAIL_MISSING', 'a new account needs an e-mail')
  const made = await exchange(open, (await signIn(open, provider, 'newcomer')).fragment.get('oidcCode'))
  t.match(made.json().user, { email: 'dan@example.org', name: 'Dan', role: 'user' }, 'with open registration a newcomer gets an account, not an administrator\'s')
})

t.test('a forged, replayed or another browser\'s state, a refusal at the provider and a wrong nonce all fail', async t => {
  const provider = await certified(t, { alice: { email: 'alice@example.org', email_verified: true } })
  const app = await build(t, { env: oidcEnv(provider) })
  const stateError = `${PUBLIC_URL}/#oidcError=OIDC_STATE_INVALID`

  const begun = await start(app, '/home')
  const back = await atProvider(new Browser(provider.tls), begun.location, 'alice')
  const forged = new URL(back)
  forged.searchParams.set('state', 'forged-state')
  t.equal((await callback(app, forged.href, begun.cookie)).location, stateError, 'a forged state')
  t.equal((await callback(app, back, '')).location, stateError, 'the right state in a browser without the cookie')
  t.equal((await callback(app, back, 'oidc_browser=' + 'x'.repeat(43))).location, stateError, 'or another browser\'s')
  const done = await callback(app, back, begun.cookie)
  t.match(done.location, /#oidcCode=/, 'the flow waited for its own browser')
  t.equal((await callback(app, back, begun.cookie)).location, stateError, 'a replayed state')
  t.equal((await app.inject({ method: 'GET', url: '/api/auth/oidc/callback' })).headers.location, stateError, 'no state at all')

  const expired = await start(app, '/home')
  const late = await atProvider(new Browser(provider.tls), expired.location, 'alice')
  await app.sql`update oidc_flows set expires_at = now() - interval '1 second'`
  t.equal((await callback(app, late, expired.cookie)).location, stateError, 'a flow older than ten minutes')

  const refused = await start(app, '/home')
  const denied = await callback(app, await atProvider(new Browser(provider.tls), refused.location, 'alice', true), refused.cookie)
  t.equal(denied.location, `${PUBLIC_URL}/home#oidcError=OIDC_DENIED`, 'a refusal at the provider')

  const tampered = await start(app, '/home')
  const other = await atProvider(new Browser(provider.tls), tampered.location, 'alice')
  await app.sql`update oidc_flows set nonce = 'another nonce'`
  t.equal((await callback(app, other, tampered.cookie)).location, `${PUBLIC_URL}/home#oidcError=OIDC_TOKEN_INVALID`, 'an id token with another nonce than the flow\'s')
  t.equal((await app.sql`select count(*)::int as n from oidc_codes`)[0].n, 1, 'only the good flow gave a code')
})

t.test('id tokens of another audience, expired, or not signed by the issuer\'s keys are refused', async t => {
  const tls = testTls(t)
  let forgery: Forgery = {}
  const { issuer } = await startForgingProvider(t, tls, () => forgery)
  const app = await build(t, { env: oidcEnv({ tls, issuer }, { REGISTRATION: 'open' }) })
  const attempt = async () => {
    const begun = await start(app, '/x')
    const back = await atProvider(new Browser(tls), begun.location, 'forged-subject')
    return new URLSearchParams(new URL((await callback(app, back, begun.cookie)).location).hash.slice(1))
  }
  const now = Math.floor(Date.now() / 1000)
  for (const [name, made] of [
    ['of another audience', { claims: { aud: 'another-client' } }],
    ['of several audiences, ours among them, without azp', { claims: { aud: [CLIENT.id, 'another-client'] } }],
    ['expired ten minutes ago', { claims: { exp: now - 600, iat: now - 900 } }],
    ['signed with a key the issuer does not publish', { foreignKey: true }],
    ['of another issuer', { claims: { iss: 'https://127.0.0.1:1' } }],
    ['without a nonce', { claims: { nonce: undefined } }]
  ] as Array<[string, Forgery]>) {
    forgery = made
    t.equal((await attempt()).get('oidcError'), 'OIDC_TOKEN_INVALID', `an id token ${name}`)
  }
  t.equal((await app.sql`select count(*)::int as n from users`)[0].n, 0, 'no account was made')
  forgery = {}
  const good = await attempt()
  t.ok(good.get('oidcCode'), 'the same provider\'s good id token signs in')
})

t.test('OIDC_ONLY turns password sign-in off but for the first administrator, until an administrator signs in with the provider', async t => {
  const provider = await certified(t, { root: { email: 'root@example.org', email_verified: true } })
  const plain = await build(t, { env: oidcEnv(provider, { REGISTRATION: 'open' }) })
  await register(plain, { email: 'root@example.org' })
  await register(plain, { email: 'user@example.org' })
  const only = await build(t, { env: oidcEnv(provider, { REGISTRATION: 'open', OIDC_ONLY: 'true', DATABASE_URL: plain.db.url }) })

  t.same((await only.inject({ method: 'GET', url: '/api/auth/oidc' })).json(), { enabled: true, name: 'Pocket ID', passwordLogin: false })
  const refusedLogin = async (email: string, password = PASSWORD) => {
    const res = await only.inject({ method: 'POST', url: '/api/auth/login', payload: { email, password } })
    t.equal(res.statusCode, 403, email)
    t.same(res.json(), { error: 'Password sign-in is off: sign in with the identity provider', code: 'PASSWORD_LOGIN_DISABLED', details: {} })
  }
  await refusedLogin('user@example.org')
  await refusedLogin('nobody@example.org')
  await refusedLogin('user@example.org', 'a wrong password')
  const registering = await only.inject({ method: 'POST', url: '/api/auth/register', payload: { email: 'new@example.org', password: PASSWORD, name: 'New' } })
  t.equal(registering.json().code, 'PASSWORD_LOGIN_DISABLED', 'nor can anyone register with a password')

  t.equal((await login(only, 'root@example.org')).user.role, 'admin', 'the first administrator still signs in with a password')
  const wrong = await only.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'root@example.org', password: 'a wrong password' } })
  t.equal(wrong.json().code, 'INVALID_CREDENTIALS')

  t.equal((await signIn(only, provider, 'root')).fragment.get('oidcError'), 'ACCOUNT_EXISTS', 'the administrator\'s first sign-in with the provider is not linked by the e-mail')
  const root = await login(only, 'root@example.org')
  const link = await ownLink(only, root.accessToken, { currentPassword: PASSWORD, redirect: '/home' })
  t.equal(link.res.statusCode, 201, 'the administrator links the identity from a session, with the password')
  const signed = await exchange(only, (await signIn(only, provider, 'root', { address: link.url, cookie: link.cookie })).fragment.get('oidcCode'))
  t.equal(signed.json().user.id, root.user.id, 'and signs in with the provider')
  t.equal((await exchange(only, (await signIn(only, provider, 'root')).fragment.get('oidcCode'))).json().user.role, 'admin', 'from then on by subject')
  await refusedLogin('root@example.org')
})

t.test('the start checks its redirect; without a provider there is no sign-in with one', async t => {
  const provider = await certified(t)
  const app = await build(t, { env: oidcEnv(provider) })
  for (const redirect of ['//evil.example', '/\\evil.example', 'https://evil.example/', 'home', '/a#b', '/a b', '/a\u0000b', '']) {
    const res = await start(app, redirect)
    t.equal(res.res.statusCode, 400, JSON.stringify(redirect))
    t.equal(res.res.json().code, 'VALIDATION_ERROR')
  }
  t.equal((await app.sql`select count(*)::int as n from oidc_flows`)[0].n, 0, 'no flow was kept')
  t.equal((await start(app, '/')).res.statusCode, 302, 'the root is a path')

  const missing = await app.inject({ method: 'GET', url: '/api/auth/oidc/start' })
  t.equal(missing.statusCode, 400, 'a redirect is required')

  const below = await build(t, { env: oidcEnv(provider, { PUBLIC_URL: 'https://home.example.org/health/' }) })
  const under = await start(below, '/home')
  t.equal(new URL(under.location).searchParams.get('redirect_uri'), 'https://home.example.org/health/api/auth/oidc/callback', 'a PUBLIC_URL with a path: the redirect URI under it')
  t.match(String(under.res.headers['set-cookie']), /; Path=\/health\/api\/auth\/oidc;/, 'and the cookie\'s path')

  const away = await build(t, { env: oidcEnv({ tls: provider.tls, issuer: 'https://127.0.0.1:9' }) })
  const unreachable = await start(away, '/home')
  t.equal(unreachable.res.statusCode, 302)
  t.equal(unreachable.location, `${PUBLIC_URL}/home#oidcError=OIDC_PROVIDER_UNAVAILABLE`, 'a provider that cannot be reached: back to the front end, saying so')

  const none = await build(t)
  t.same((await none.inject({ method: 'GET', url: '/api/auth/oidc' })).json(), { enabled: false, name: null, passwordLogin: true })
  t.equal((await none.inject({ method: 'GET', url: '/api/auth/oidc/start?redirect=/' })).statusCode, 404)
  t.equal((await none.inject({ method: 'GET', url: '/api/auth/oidc/callback?state=x' })).statusCode, 404)
  t.equal((await exchange(none, 'x')).json().code, 'OIDC_CODE_INVALID')
})

t.test('a redirect with characters outside ASCII comes back percent-encoded in UTF-8, and what is encoded comes back as it was', async t => {
  const provider = await certified(t, { alice: { email: 'alice@example.org', email_verified: true } })
  const app = await build(t, { env: oidcEnv(provider) })
  for (const [redirect, path] of [
    ['/a中', '/a%E4%B8%AD'],
    ['/a%E4%B8%AD', '/a%E4%B8%AD'],
    ['/😀/é?tab=ü&x=%2F', '/%F0%9F%98%80/%C3%A9?tab=%C3%BC&x=%2F'],
    ['/a%2Fb', '/a%2Fb']
  ]) {
    const done = await signIn(app, provider, 'alice', { address: `/api/auth/oidc/start?redirect=${encodeURIComponent(redirect)}` })
    t.ok(done.location.startsWith(`${PUBLIC_URL}${path}#oidcCode=`), `${redirect}: ${done.location}`)
  }
  const raw = await app.inject({ method: 'GET', url: '/api/auth/oidc/start?redirect=/a%E4%B8%AD' })
  t.equal(raw.statusCode, 302, 'a path the browser encoded itself')
  t.same((await app.sql`select distinct redirect from oidc_flows`).map(row => row.redirect), ['/a%E4%B8%AD'], 'is kept encoded')
  for (const space of ['3000', '00a0', '2028']) {
    t.equal((await start(app, `/a${String.fromCodePoint(parseInt(space, 16))}b`)).res.statusCode, 400, `a space of Unicode's: U+${space}`)
  }

  const away = await build(t, { env: oidcEnv({ tls: provider.tls, issuer: 'https://127.0.0.1:9' }) })
  t.equal((await start(away, '/a中')).location, `${PUBLIC_URL}/a%E4%B8%AD#oidcError=OIDC_PROVIDER_UNAVAILABLE`, 'straight back from the start too')
})

t.test('the start, the callback and the exchange are limited like a login', async t => {
  const provider = await certified(t)
  const app = await build(t, { env: oidcEnv(provider, { AUTH_RATE_LIMIT_MAX: '2' }) })
  for (const url of ['/api/auth/oidc/start?redirect=/', '/api/auth/oidc/callback?state=x']) {
    const statuses = []
    for (let i = 0; i < 3; i++) statuses.push((await app.inject({ method: 'GET', url })).statusCode)
    t.equal(statuses[2], 429, url)
  }
  const statuses = []
  for (let i = 0; i < 3; i++) statuses.push((await exchange(app, 'x')).statusCode)
  t.same(statuses, [400, 400, 429], 'the exchange')
})
