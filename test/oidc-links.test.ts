import t from 'tap'
import { createHash } from 'node:crypto'
import { build, call, login, PASSWORD, register, type App, type Pair } from './helper'
import { atProvider, callback, certified, exchange, oidcEnv, open, ownLink, PUBLIC_URL, signIn, signedInUser, type Provider } from './oidc-flow'
import { Browser } from './oidc-servers'

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

/** Who is linked to what, by subject. */
async function links (app: App): Promise<Record<string, number>> {
  const rows = await app.sql<{ subject: string, userId: number }[]>`select subject, user_id as "userId" from user_identities order by subject`
  return Object.fromEntries(rows.map(row => [row.subject, row.userId]))
}

/** The link token in a link's address. */
const tokenOf = (url: string) => new URL(url).searchParams.get('link') as string

/** The error a sign-in from a link's address ends with, when it ends without a code. */
async function failedLink (app: App, provider: Provider, subject: string, url: string, cookie?: string): Promise<string | null> {
  const done = await signIn(app, provider, subject, { address: url, cookie })
  return done.fragment.has('oidcCode') ? null : done.fragment.get('oidcError')
}

t.test('an account that takes the e-mail of a person gets no identity of theirs, however it took the e-mail', async t => {
  const provider = await certified(t, {
    victim: { email: 'victim@example.org', email_verified: true, name: 'Victim' },
    mallory: { email: 'mallory@example.org', email_verified: true, name: 'Mallory' }
  })
  const app = await build(t, { env: oidcEnv(provider, { REGISTRATION: 'open' }) })
  await register(app)
  const victimEnds = async (label: string) => {
    const done = await signIn(app, provider, 'victim')
    t.equal(done.location, `${PUBLIC_URL}/home#oidcError=ACCOUNT_EXISTS`, `${label}: the victim's first sign-in ends without a code`)
    t.notOk('victim' in await links(app), `${label}: the victim's identity is linked to no account`)
    t.equal((await app.sql`select count(*)::int as n from oidc_codes`)[0].n, 0, `${label}: no code was given`)
  }

  const registered = await register(app, { email: 'Victim@Example.org', name: 'Mallory' })
  await victimEnds('registered with the victim\'s e-mail, in another case')
  t.same((await call(app, registered, 'GET', '/api/me/identities')).json().data, [], 'the attacker\'s account has no identity')
  await call(app, registered, 'PATCH', '/api/me', { email: 'mallory-old@example.org' })

  const patched = await register(app, { email: 'mallory-2@example.org' })
  t.equal((await call(app, patched, 'PATCH', '/api/me', { email: 'victim@example.org' })).statusCode, 200)
  await victimEnds('the e-mail changed to the victim\'s')
  await call(app, patched, 'PATCH', '/api/me', { email: 'mallory-2@example.org' })

  const only = await build(t, { env: oidcEnv(provider, { REGISTRATION: 'open', OIDC_ONLY: 'true', DATABASE_URL: app.db.url }) })
  const mallory = (await exchange(only, (await signIn(only, provider, 'mallory')).fragment.get('oidcCode'))).json()
  t.equal(mallory.user.email, 'mallory@example.org', 'under OIDC_ONLY, the attacker signs in with an identity of their own')
  t.equal((await call(only, mallory, 'PATCH', '/api/me', { email: 'victim@example.org' })).statusCode, 200, 'and takes the victim\'s e-mail')
  const done = await signIn(only, provider, 'victim')
  t.equal(done.fragment.get('oidcError'), 'ACCOUNT_EXISTS', 'the victim\'s first sign-in ends without a code')
  t.same(await links(only), { mallory: mallory.user.id }, 'the victim\'s subject is linked to no account; the attacker\'s account has its own identity alone')
  t.same((await call(only, mallory, 'GET', '/api/me/identities')).json().data.map((identity: { subject: string }) => identity.subject), ['mallory'])
  t.equal((await signedInUser(only, await signIn(only, provider, 'mallory')))?.id, mallory.user.id, 'and the attacker\'s identity still signs in to the attacker\'s account alone')
})

t.test('a user links an identity from a session with the password, in the same browser, once', async t => {
  const provider = await certified(t, {
    bob: { email: 'robert@elsewhere.example', email_verified: false },
    other: { email: 'other@elsewhere.example', email_verified: true }
  })
  const logs: string[] = []
  const app = await build(t, { env: oidcEnv(provider, { REGISTRATION: 'open' }), logs })
  const admin = await register(app)
  const bob = await register(app, { email: 'bob@example.org' })
  const carol = await register(app, { email: 'carol@example.org' })
  const body = { currentPassword: PASSWORD, redirect: '/settings' }

  const wrong = await ownLink(app, bob.accessToken, { ...body, currentPassword: 'a wrong password' })
  t.equal(wrong.res.statusCode, 403)
  t.same(wrong.res.json(), { error: 'The current password is wrong', code: 'WRONG_PASSWORD', details: {} }, 'a wrong password')
  const bad = await ownLink(app, bob.accessToken, { ...body, redirect: '//evil.example' })
  t.equal(bad.res.json().details.issues[0].path, '/body/redirect', 'a redirect off the origin')
  const token = await call(app, bob, 'POST', '/api/me/tokens', { name: 'script', scope: 'write' })
  const personal = await ownLink(app, token.json().token, body)
  t.same([personal.res.statusCode, personal.res.json().code], [403, 'FORBIDDEN'], 'a personal access token is refused')
  t.equal((await app.inject({ method: 'GET', url: '/api/me/identities', headers: { authorization: `Bearer ${token.json().token}` } })).statusCode, 403, 'and may not list identities')
  t.equal((await app.sql`select count(*)::int as n from identity_links`)[0].n, 0, 'no link token was made')

  const link = await ownLink(app, bob.accessToken, body)
  t.equal(link.res.statusCode, 201)
  t.ok(link.url.startsWith(`${PUBLIC_URL}/api/auth/oidc/start?redirect=%2Fsettings&link=`), link.url)
  t.match(String(link.res.headers['set-cookie']), /^oidc_browser=[A-Za-z0-9_-]{43}; Path=\/api\/auth\/oidc; Max-Age=600; HttpOnly; SameSite=Lax; Secure$/, 'the browser that asked is remembered')
  const [stored] = await app.sql`select token_hash, user_id, made_by, expires_at <= now() + interval '10 minutes' and expires_at > now() + interval '9 minutes' as ten from identity_links`
  t.same(stored, { token_hash: sha256(tokenOf(link.url)), user_id: bob.user.id, made_by: 'user', ten: true }, 'only its hash is kept, for ten minutes')

  t.equal(await failedLink(app, provider, 'bob', link.url), 'OIDC_LINK_INVALID', 'another browser cannot use it')
  t.equal(await failedLink(app, provider, 'bob', link.url, 'oidc_browser=' + 'x'.repeat(43)), 'OIDC_LINK_INVALID', 'nor one with another cookie')
  const linked = await signIn(app, provider, 'bob', { address: link.url, cookie: link.cookie })
  t.match(linked.location, /^https:\/\/health\.example\.org\/settings#oidcCode=/)
  t.equal((await signedInUser(app, linked))?.id, bob.user.id, 'the sign-in lands on the account that asked, whatever the provider\'s e-mail')
  t.same(await links(app), { bob: bob.user.id })
  t.match((await call(app, bob, 'GET', '/api/me/identities')).json(), { data: [{ issuer: provider.issuer, subject: 'bob' }], meta: { total: 1 } }, 'the user sees it')
  t.equal(await failedLink(app, provider, 'bob', link.url, link.cookie), 'OIDC_LINK_INVALID', 'a link token is used once')
  t.equal((await signedInUser(app, await signIn(app, provider, 'bob')))?.id, bob.user.id, 'from then on the identity signs in to the account')

  const expired = await ownLink(app, bob.accessToken, body, link.cookie)
  await app.sql`update identity_links set expires_at = now() - interval '1 second'`
  t.equal(await failedLink(app, provider, 'other', expired.url, expired.cookie), 'OIDC_LINK_INVALID', 'an expired link token')
  const late = await ownLink(app, bob.accessToken, body, link.cookie)
  const begun = await open(app, late.url, late.cookie)
  await app.sql`update identity_links set expires_at = now() - interval '1 second'`
  const back = await callback(app, await atProvider(new Browser(provider.tls), begun.location, 'other'), begun.cookie)
  t.equal(back.location, `${PUBLIC_URL}/settings#oidcError=OIDC_LINK_INVALID`, 'one that expires while the person is at the provider')

  const taken = await ownLink(app, carol.accessToken, body)
  t.equal(await failedLink(app, provider, 'bob', taken.url, taken.cookie), 'IDENTITY_TAKEN', 'an identity of another account')
  t.same(await links(app), { bob: bob.user.id }, 'is left where it is')
  t.equal((await signedInUser(app, await signIn(app, provider, 'other', { address: taken.url, cookie: taken.cookie })))?.id, carol.user.id, 'and the link token stays good for another identity')

  const disabled = await ownLink(app, carol.accessToken, body)
  await call(app, admin, 'PATCH', `/api/admin/users/${carol.user.id}`, { disabled: true })
  t.equal(await failedLink(app, provider, 'other', disabled.url, disabled.cookie), 'OIDC_LINK_INVALID', 'a link token of a disabled account')
  t.notOk(logs.join('').includes(tokenOf(link.url)), 'no link token is logged')
})

t.test('an account without a password asks an administrator; the checks of a password are counted with the password change\'s', async t => {
  const provider = await certified(t, { made: { email: 'made@example.org', email_verified: true } })
  const app = await build(t, { env: oidcEnv(provider, { REGISTRATION: 'open', AUTH_RATE_LIMIT_MAX: '3' }) })
  await register(app)
  const made = (await exchange(app, (await signIn(app, provider, 'made')).fragment.get('oidcCode'))).json() as Pair
  const none = await ownLink(app, made.accessToken, { currentPassword: PASSWORD, redirect: '/' })
  t.equal(none.res.statusCode, 409)
  t.equal(none.res.json().code, 'PASSWORD_NOT_SET', 'an account made by the provider has no password to prove')

  const user = await register(app)
  for (let i = 0; i < 2; i++) await call(app, user, 'POST', '/api/me/password', { currentPassword: 'wrong password', newPassword: PASSWORD })
  const limited = await ownLink(app, user.accessToken, { currentPassword: PASSWORD, redirect: '/' })
  t.equal(limited.res.statusCode, 429, 'the checks of a password share their counts with the password change')
  t.ok(limited.res.headers['retry-after'])

  const plain = await build(t)
  const someone = await register(plain)
  t.equal((await ownLink(plain, someone.accessToken, { currentPassword: PASSWORD, redirect: '/' })).res.statusCode, 404, 'no link without a provider')
})

t.test('an administrator links a person\'s identity to their account under OIDC_ONLY, lists it and removes it', async t => {
  const provider = await certified(t, { person: { email: 'user@example.org', email_verified: true } })
  const plain = await build(t, { env: oidcEnv(provider, { REGISTRATION: 'open' }) })
  await register(plain, { email: 'root@example.org' })
  const user = await register(plain, { email: 'user@example.org' })
  const only = await build(t, { env: oidcEnv(provider, { OIDC_ONLY: 'true', DATABASE_URL: plain.db.url }) })
  const root = await login(only, 'root@example.org')
  t.equal((await only.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'user@example.org', password: PASSWORD } })).json().code, 'PASSWORD_LOGIN_DISABLED', 'the person cannot sign in with the password')
  t.equal((await signIn(only, provider, 'person')).fragment.get('oidcError'), 'ACCOUNT_EXISTS', 'nor is the provider\'s identity linked by the e-mail')

  const linkOf = (pair: Pair, id: number, body: Record<string, unknown> = {}) => call(only, pair, 'POST', `/api/admin/users/${id}/identity-link`, body)
  t.same((await linkOf(user, user.user.id)).json().code, 'FORBIDDEN', 'a user who is not an administrator is refused')
  t.equal((await linkOf(root, 999999)).statusCode, 404, 'an unknown user')
  t.equal((await linkOf(root, user.user.id, { redirect: 'https://evil.example' })).statusCode, 400, 'a redirect off the origin')
  const first = await linkOf(root, user.user.id)
  t.equal(first.statusCode, 201)
  const second = await linkOf(root, user.user.id, { redirect: '/welcome' })
  t.ok(second.json().url.startsWith(`${PUBLIC_URL}/api/auth/oidc/start?redirect=%2Fwelcome&link=`))
  t.ok(Date.parse(second.json().expiresAt) > Date.now() + 6 * 86_400_000, 'good for a week')
  t.same((await only.sql`select token_hash, made_by from identity_links`), [{ token_hash: sha256(tokenOf(second.json().url)), made_by: 'admin' }], 'only the hash of the last one is kept')
  t.equal(await failedLink(only, provider, 'person', first.json().url), 'OIDC_LINK_INVALID', 'the one it replaced is dead')

  const done = await signIn(only, provider, 'person', { address: second.json().url })
  t.match(done.location, /^https:\/\/health\.example\.org\/welcome#oidcCode=/, 'the person opens it in their own browser')
  t.equal((await signedInUser(only, done))?.id, user.user.id, 'and signs in to their account')
  t.equal((await login(only, 'root@example.org')).user.id, root.user.id, 'the first administrator keeps the password until an administrator signs in with the provider')

  const listed = await call(only, root, 'GET', `/api/admin/users/${user.user.id}/identities`)
  t.match(listed.json(), { data: [{ issuer: provider.issuer, subject: 'person' }], meta: { total: 1 } })
  t.equal((await call(only, root, 'GET', '/api/admin/users/999999/identities')).statusCode, 404)
  const identityId = listed.json().data[0].id
  t.equal((await call(only, user, 'DELETE', `/api/admin/users/${user.user.id}/identities/${identityId}`)).statusCode, 403, 'only an administrator removes one')
  t.equal((await call(only, root, 'DELETE', `/api/admin/users/${root.user.id}/identities/${identityId}`)).statusCode, 404, 'an identity of another user')
  t.equal((await call(only, root, 'DELETE', `/api/admin/users/${user.user.id}/identities/${identityId}`)).statusCode, 204)
  t.same(await links(only), {}, 'a wrong link undone')
  t.equal((await signIn(only, provider, 'person')).fragment.get('oidcError'), 'ACCOUNT_EXISTS', 'the next sign-in is a first one again')

  const gone = await linkOf(root, user.user.id)
  await call(only, root, 'DELETE', `/api/admin/users/${user.user.id}`)
  t.equal(await failedLink(only, provider, 'person', gone.json().url), 'OIDC_LINK_INVALID', 'a link token of a deleted account')
})
