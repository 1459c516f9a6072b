import t from 'tap'
import { createSigner } from 'fast-jwt'
import { build, bearer, call, familyOf, login, register, PASSWORD, TEST_ENV, type Pair } from './helper'
import {
  archivePayload, classify, concrete, DECIDED_INSIDE, fixture, injectRoute, multipartPayload, OWNER_ONLY, publicSample, READS_BY_POST, sample, tableCounts, WRITERS_ONLY_READS, type Fixture
} from './route-samples'

/**
 * Every route the app registers, tried by every kind of caller. The list of
 * routes comes from the app itself, so a new route is covered without anyone
 * remembering: it only needs a sample request in route-samples.ts, or this test fails.
 */

type Persona = 'none' | 'expired' | 'otherSecret' | 'stranger' | 'admin' | 'viewer' | 'member' | 'owner' | TokenPersona

/**
 * Personal access tokens: the owner's, read-only, read and write, and read and
 * write bound to the owner's own family (not the fixture's); and an
 * administrator's, read and write.
 */
type TokenPersona = 'readToken' | 'writeToken' | 'boundToken' | 'adminToken'
const TOKEN_PERSONAS: TokenPersona[] = ['readToken', 'writeToken', 'boundToken', 'adminToken']

/** Routes of the account itself, which no token reaches (administration aside). */
const TOKEN_REFUSED = /^(POST \/api\/me\/password|GET \/api\/me\/identities|POST \/api\/me\/identities\/link|PATCH \/api\/me|GET \/api\/me\/sessions|DELETE \/api\/me\/sessions\/\{id\}|(GET|POST) \/api\/me\/tokens|DELETE \/api\/me\/tokens\/\{id\}|(GET|PUT) \/api\/me\/notifications|POST \/api\/auth\/logout|POST \/api\/invites\/accept)$/
/** Routes that make a family: no token bound to a family. */
const UNBOUND_ONLY = ['POST /api/families', 'POST /api/families/import']
/** The POST a read token may send: it only reads. */
const READS_BY_TOKEN = ['POST /api/families/{id}/events/tickets']

t.test('every route against every kind of caller', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open' } })
  const admin = await register(app)
  t.equal(admin.user.role, 'admin')
  const owner = await register(app)
  const member = await register(app)
  const viewer = await register(app)
  const stranger = await register(app)
  const ids = { owner: owner.user.id, member: member.user.id, viewer: viewer.user.id }
  const shared = await fixture(app, ids)

  const claims = JSON.parse(Buffer.from(owner.accessToken.split('.')[1], 'base64url').toString())
  const expired = createSigner({ key: TEST_ENV.JWT_SECRET, algorithm: 'HS256', expiresIn: 1000, clockTimestamp: Date.now() - 3600_000 })({ sub: claims.sub, sid: claims.sid, role: 'user', families: [] })
  const otherSecret = createSigner({ key: TEST_ENV.JWT_REFRESH_SECRET, algorithm: 'HS256', expiresIn: 60000 })({ sub: claims.sub, sid: claims.sid, role: 'admin', families: [] })
  const personal = async (pair: Pair, body: Record<string, unknown>): Promise<string> => {
    const res = await call(app, pair, 'POST', '/api/me/tokens', body)
    t.equal(res.statusCode, 201)
    return res.json().token
  }
  const tokens: Record<Persona, string | null> = {
    none: null, expired, otherSecret, stranger: stranger.accessToken, admin: admin.accessToken,
    viewer: viewer.accessToken, member: member.accessToken, owner: owner.accessToken,
    readToken: await personal(owner, { name: 'read', scope: 'read' }),
    writeToken: await personal(owner, { name: 'write', scope: 'write' }),
    boundToken: await personal(owner, { name: 'bound', scope: 'write', familyId: familyOf(owner) }),
    adminToken: await personal(admin, { name: 'admin', scope: 'write' })
  }

  const routes = [...new Set(app.checker.routes
    .filter(route => !route.hidden && route.method !== 'HEAD' && !route.path.includes('*'))
    .map(route => `${route.method} ${route.path}`))]
  const doc = app.swagger() as { paths: Record<string, Record<string, { security?: unknown[] }>> }
  const protectedRoutes = routes.filter(route => {
    const [method, url] = route.split(' ')
    return (doc.paths[url]?.[method.toLowerCase()]?.security ?? []).length > 0
  })
  t.ok(protectedRoutes.length >= 60, `${protectedRoutes.length} protected routes`)
  const missing = protectedRoutes.filter(route => sample(route, shared) === undefined)
  t.same(missing, [], 'every protected route has a sample request in this test')

  async function send (route: string, persona: Persona, f: Fixture) {
    const [method] = route.split(' ')
    const s = sample(route, f) ?? {}
    const url = concrete(route, f) + (s.query === undefined ? '' : `?${s.query}`)
    const token = tokens[persona]
    const headers: Record<string, string> = token === null ? {} : bearer(token)
    if (s.multipart !== undefined && s.multipart !== false) {
      const { payload, headers: extraHeaders } = s.multipart === 'archive' ? await archivePayload(app) : await multipartPayload()
      return injectRoute(app, { method: method as 'POST', url, headers: { ...headers, ...extraHeaders }, payload })
    }
    if (s.csv !== undefined) {
      return injectRoute(app, { method: method as 'POST', url, headers: { ...headers, 'content-type': 'text/csv' }, payload: s.csv })
    }
    return injectRoute(app, { method: method as 'GET', url, headers, ...(s.body === undefined ? {} : { payload: s.body }) })
  }

  let checked = 0
  const before = await tableCounts(app)
  for (const route of protectedRoutes) {
    const category = classify(route)
    const write = (!route.startsWith('GET ') && !READS_BY_POST.includes(route) && !DECIDED_INSIDE.includes(route)) || WRITERS_ONLY_READS.includes(route)
    const refused: Array<[Persona, number]> = [['none', 401], ['expired', 401], ['otherSecret', 401]]
    if (category === 'admin') refused.push(['stranger', 403], ['viewer', 403], ['member', 403], ['owner', 403])
    if (category === 'family') {
      refused.push(['stranger', 403], ['admin', 403])
      if (write) refused.push(['viewer', 403])
      if (OWNER_ONLY.includes(route)) refused.push(['viewer', 403], ['member', 403])
    }
    if (category === 'admin' || TOKEN_REFUSED.test(route)) {
      refused.push(...TOKEN_PERSONAS.map(persona => [persona, 403] as [Persona, number]))
    } else {
      if (!route.startsWith('GET ') && !READS_BY_TOKEN.includes(route)) refused.push(['readToken', 403])
      if (category === 'family' || UNBOUND_ONLY.includes(route)) refused.push(['boundToken', 403])
      if (category === 'family') refused.push(['adminToken', 403])
    }
    for (const [persona, status] of refused) {
      const res = await send(route, persona, shared)
      t.equal(res.statusCode, status, `${persona}: ${route}`)
      if (status === 401) t.equal(res.json().code, persona === 'expired' ? 'TOKEN_EXPIRED' : 'UNAUTHORIZED')
      if (status === 403) t.same(res.json(), { error: 'Access denied', code: 'FORBIDDEN', details: {} }, `${persona}: ${route}: the error body`)
      t.notOk(res.body.includes(shared.marker), `${persona}: ${route}: no data of the family`)
      checked += 1
    }
  }
  t.equal(await tableCounts(app), before, 'no refused request changed anything')

  const freshUsers = ids
  for (const route of protectedRoutes) {
    const category = classify(route)
    const write = (!route.startsWith('GET ') && !READS_BY_POST.includes(route) && !DECIDED_INSIDE.includes(route)) || WRITERS_ONLY_READS.includes(route)
    const allowed: Persona[] = category === 'admin'
      ? ['admin']
      : category === 'own'
        ? ['stranger', 'viewer', 'owner']
        : OWNER_ONLY.includes(route) ? ['owner'] : write ? ['member', 'owner'] : ['viewer', 'member', 'owner']
    // The owner's tokens may do what the owner may, within their limits.
    if (category !== 'admin' && !TOKEN_REFUSED.test(route)) {
      allowed.push('writeToken')
      if (route.startsWith('GET ') || READS_BY_TOKEN.includes(route)) allowed.push('readToken')
      if (category === 'own' && !UNBOUND_ONLY.includes(route)) allowed.push('boundToken')
    }
    for (const persona of allowed) {
      // A token's read changes nothing: it reads the shared family, and a write gets a family of its own.
      const f = persona.endsWith('Token') && route.startsWith('GET ') ? shared : await fixture(app, freshUsers)
      const res = await send(route, persona, f)
      t.ok(res.statusCode < 500 && res.statusCode !== 401 && res.statusCode !== 403, `${persona} may: ${route} (${res.statusCode} ${res.statusCode >= 400 ? res.body.slice(0, 120) : ''})`)
      if (category === 'own' && (persona === 'stranger' || persona === 'boundToken')) {
        t.notOk(res.body.includes(f.marker), `stranger: ${route}: no data of another family`)
      }
      checked += 1
      if (route === 'POST /api/auth/logout' || route.startsWith('DELETE /api/me/sessions') || route === 'POST /api/me/password') {
        const again = await login(app, (persona === 'stranger' ? stranger : persona === 'viewer' ? viewer : owner).user.email, PASSWORD)
        tokens[persona] = again.accessToken
      }
    }
  }
  t.ok(checked > 400, `${protectedRoutes.length} routes × personas: ${checked} requests checked`)

  // Share links: public, the token in the path is the credential, and a bearer changes nothing.
  const linkRoutes = routes.filter(route => route.includes(' /api/shl/'))
  t.same(linkRoutes.filter(route => (doc.paths[route.split(' ')[1]]?.[route.split(' ')[0].toLowerCase()]?.security ?? []).length > 0), [], 'the share link routes are public')
  t.same(linkRoutes.filter(route => publicSample(route, shared) === undefined), [], 'every share link route has a sample request')
  t.ok(linkRoutes.length >= 2)
  for (const route of linkRoutes) {
    const [method] = route.split(' ')
    const s = publicSample(route, shared) as NonNullable<ReturnType<typeof publicSample>>
    for (const [persona, token] of Object.entries(tokens)) {
      const res = await injectRoute(app, { method: method as 'GET', url: s.url, headers: token === null ? {} : bearer(token), ...(s.body === undefined ? {} : { payload: s.body }) })
      t.equal(res.statusCode, s.status, `${persona}: ${route}`)
    }
  }
})
