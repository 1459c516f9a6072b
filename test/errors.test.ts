import t, { type Test } from 'tap'
import { Type } from '@sinclair/typebox'
import { errors } from '../lib/errors'
import { createSql } from '../db/client'
import { FreeText, Id, Name, Nullable, Secret, StrictObject, errorResponses } from '../lib/schemas'
import { bearer, build, register, type App } from './helper'

const Echo = StrictObject({
  name: Name(100),
  heightCm: Type.Optional(Nullable(Type.Number({ minimum: 20, maximum: 250 }))),
  notes: Type.Optional(Nullable(FreeText)),
  password: Type.Optional(Secret({ minLength: 1 })),
  child: Type.Optional(StrictObject({ nickname: Type.Optional(Nullable(Name(50))) }))
})

/** Routes of the test's own that reach each layer of the shared error handling. */
function routes (app: App): void {
  app.post('/api/test/echo', { schema: { body: Echo, response: { 200: Echo, ...errorResponses(400) } } }, async request => request.body)
  app.post('/api/test/optional', { schema: { body: StrictObject({ note: Type.Optional(Type.String()) }) } }, async request => ({ got: request.body }))
  app.get('/api/test/items/:id', {
    schema: {
      params: StrictObject({ id: Id }),
      querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 50 })), q: Type.Optional(Type.String()) })
    }
  }, async request => ({ params: request.params, query: request.query }))
  app.post('/api/test/families', { schema: { body: Type.Object({ name: Type.String() }) } }, async request => {
    const [row] = await app.sql`insert into families (name) values (${(request.body as { name: string }).name}) returning id`
    return row
  })
  app.post('/api/test/duplicate-user', async () => {
    await app.sql`insert into users (email, password_hash, name) values ('a@example.org', 'x', 'A')`
    await app.sql`insert into users (email, password_hash, name) values ('A@example.org', 'x', 'B')`
    return {}
  })
  app.post('/api/test/orphan', async () => {
    await app.sql`insert into family_members (family_id, user_id, role) values (999, 999, 'owner')`
    return {}
  })
  // Values the database refuses, sent past any schema: what a schema misses must still name something.
  app.post('/api/test/raw-family', async request => {
    const { name } = request.body as { name: string | null }
    const [row] = await app.sql`insert into families (name) values (${name}) returning id`
    return row
  })
  app.get('/api/test/raw-date', async request => {
    const [row] = await app.sql`select ${(request.query as { on: string }).on}::date as on`
    return row
  })
  app.get('/api/test/crash', async () => { throw new Error('secret cause at /srv/app/file.ts:12') })
  app.get('/api/test/unauthorized', async () => { throw new errors.unauthorized('Missing token') })
  app.get('/api/test/not-found', async () => { throw new errors.notFound('Child') })
  app.get('/api/test/database-down', async () => {
    const down = createSql('postgres://postgres@127.0.0.1:1/none', { max: 1, connect_timeout: 2 })
    try {
      await down`select 1`
    } finally {
      await down.end({ timeout: 0 })
    }
    return {}
  })
}

function isErrorBody (t: Test, body: any, code: string): void {
  t.same(Object.keys(body).sort(), ['code', 'details', 'error'], 'exactly error, code and details')
  t.equal(body.code, code)
  t.equal(typeof body.error, 'string')
  t.ok(body.error.length > 0)
  t.equal(typeof body.details, 'object')
  t.notOk(Array.isArray(body.details))
  t.notMatch(JSON.stringify(body), /\s+at\s.+:\d+:\d+/, 'no stack trace')
}

t.test('validation errors list every issue with its path', async t => {
  const app = await build(t, { routes })
  const res = await app.inject({ method: 'POST', url: '/api/test/echo', payload: { heightCm: 300, extra: 1, child: { nickname: 5, other: true } } })
  t.equal(res.statusCode, 400)
  const body = res.json()
  isErrorBody(t, body, 'VALIDATION_ERROR')
  t.same(Object.keys(body.details), ['issues'])
  const issues = body.details.issues
  t.same(issues.find((i: any) => i.path === '/body/heightCm'), { path: '/body/heightCm', message: 'must be <= 250' })
  t.same(issues.find((i: any) => i.path === '/body/extra'), { path: '/body/extra', message: 'is not allowed' })
  t.same(issues.find((i: any) => i.path === '/body/name'), { path: '/body/name', message: 'is required' })
  t.same(issues.find((i: any) => i.path === '/body/child/other'), { path: '/body/child/other', message: 'is not allowed' })
  t.ok(issues.find((i: any) => i.path === '/body/child/nickname'), 'nested issues are listed')
})

t.test('at most 20 issues are listed', async t => {
  const app = await build(t, { routes })
  const payload: Record<string, number> = { name: 1 as never }
  for (let i = 0; i < 40; i++) payload[`unknown${i}`] = i
  const res = await app.inject({ method: 'POST', url: '/api/test/echo', payload })
  t.equal(res.statusCode, 400)
  t.equal(res.json().details.issues.length, 20)
})

t.test('body values are not coerced', async t => {
  const app = await build(t, { routes })
  for (const [field, value] of [['heightCm', '80.5'], ['name', 42], ['heightCm', true], ['name', ['Kim']]] as const) {
    const res = await app.inject({ method: 'POST', url: '/api/test/echo', payload: { name: 'Kim', [field]: value } })
    t.equal(res.statusCode, 400, `${field}: ${JSON.stringify(value)} is refused`)
    t.equal(res.json().details.issues[0].path, `/body/${field}`)
  }
})

t.test('strings are trimmed, empty optional strings become null, secrets are kept as sent', async t => {
  const app = await build(t, { routes })
  const res = await app.inject({
    method: 'POST',
    url: '/api/test/echo',
    payload: { name: '  Kim  ', notes: '   ', password: '  pass word  ', heightCm: null, child: { nickname: ' ' } }
  })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { name: 'Kim', notes: null, password: '  pass word  ', heightCm: null, child: { nickname: null } })

  const blank = await app.inject({ method: 'POST', url: '/api/test/echo', payload: { name: '   ' } })
  t.equal(blank.statusCode, 400, 'an empty required string is refused')
  t.same(blank.json().details.issues, [{ path: '/body/name', message: 'must NOT have fewer than 1 characters' }])

  const long = await app.inject({ method: 'POST', url: '/api/test/echo', payload: { name: ' ' + 'é'.repeat(100) + ' ' } })
  t.equal(long.statusCode, 200, 'length counts characters after trimming')
})

t.test('malformed JSON, wrong content types and large bodies', async t => {
  const app = await build(t, { routes })
  const malformed = await app.inject({ method: 'POST', url: '/api/test/echo', headers: { 'content-type': 'application/json' }, payload: '{"name": "Kim",' })
  t.equal(malformed.statusCode, 400)
  isErrorBody(t, malformed.json(), 'INVALID_BODY')

  const poisoned = await app.inject({ method: 'POST', url: '/api/test/echo', headers: { 'content-type': 'application/json' }, payload: '{"name":"Kim","__proto__":{"admin":true}}' })
  t.equal(poisoned.statusCode, 400)
  isErrorBody(t, poisoned.json(), 'INVALID_BODY')

  const text = await app.inject({ method: 'POST', url: '/api/test/echo', headers: { 'content-type': 'text/plain' }, payload: 'name=Kim' })
  t.equal(text.statusCode, 415)
  isErrorBody(t, text.json(), 'UNSUPPORTED_MEDIA_TYPE')

  const form = await app.inject({ method: 'POST', url: '/api/test/echo', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'name=Kim' })
  t.equal(form.statusCode, 415)

  const big = await app.inject({ method: 'POST', url: '/api/test/echo', payload: { name: 'Kim', notes: 'x'.repeat(1024 * 1024) } })
  t.equal(big.statusCode, 413)
  isErrorBody(t, big.json(), 'PAYLOAD_TOO_LARGE')

  const justUnder = await app.inject({ method: 'POST', url: '/api/test/optional', payload: { note: 'x'.repeat(1024 * 1024 - 20) } })
  t.equal(justUnder.statusCode, 200, 'a body just under 1 MiB is read')
})

t.test('an empty JSON body is accepted where the body is optional', async t => {
  const app = await build(t, { routes })
  const empty = await app.inject({ method: 'POST', url: '/api/test/optional', headers: { 'content-type': 'application/json' }, payload: '' })
  t.equal(empty.statusCode, 200)
  t.same(empty.json(), { got: {} })
  const none = await app.inject({ method: 'POST', url: '/api/test/optional' })
  t.equal(none.statusCode, 200, 'and so is no body at all')
  const required = await app.inject({ method: 'POST', url: '/api/test/echo', headers: { 'content-type': 'application/json' }, payload: '' })
  t.equal(required.statusCode, 400, 'and refused where a body is required')
  isErrorBody(t, required.json(), 'VALIDATION_ERROR')
})

t.test('path and query parameters are converted and checked', async t => {
  const app = await build(t, { routes })
  const ok = await app.inject({ method: 'GET', url: '/api/test/items/7?limit=5&q=%20milk%20&ignored=1' })
  t.equal(ok.statusCode, 200)
  t.same(ok.json(), { params: { id: 7 }, query: { limit: 5, q: 'milk', ignored: '1' } })

  const defaults = await app.inject({ method: 'GET', url: '/api/test/items/7' })
  t.same(defaults.json().query, { limit: 50 })

  for (const [url, path] of [
    ['/api/test/items/0', '/params/id'],
    ['/api/test/items/2147483648', '/params/id'],
    ['/api/test/items/1.5', '/params/id'],
    ['/api/test/items/abc', '/params/id'],
    ['/api/test/items/1?limit=0', '/query/limit'],
    ['/api/test/items/1?limit=1001', '/query/limit'],
    ['/api/test/items/1?limit=ten', '/query/limit']
  ]) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 400, url)
    isErrorBody(t, res.json(), 'VALIDATION_ERROR')
    t.equal(res.json().details.issues[0].path, path)
  }
})

t.test('unknown routes answer ROUTE_NOT_FOUND, with or without a token', async t => {
  const app = await build(t, { routes })
  for (const headers of [{}, { authorization: 'Bearer nonsense' }]) {
    const res = await app.inject({ method: 'GET', url: '/api/nothing-here', headers })
    t.equal(res.statusCode, 404)
    isErrorBody(t, res.json(), 'ROUTE_NOT_FOUND')
    t.ok(res.headers['x-request-id'])
  }
  const wrongMethod = await app.inject({ method: 'DELETE', url: '/api/health' })
  t.equal(wrongMethod.statusCode, 404)
  t.equal(wrongMethod.json().code, 'ROUTE_NOT_FOUND')
})

t.test('PostgreSQL constraint errors become 400 and 409', async t => {
  const app = await build(t, { routes })
  const check = await app.inject({ method: 'POST', url: '/api/test/families', payload: { name: '' } })
  t.equal(check.statusCode, 400, 'a check violation is a 400')
  isErrorBody(t, check.json(), 'VALIDATION_ERROR')

  const unique = await app.inject({ method: 'POST', url: '/api/test/duplicate-user' })
  t.equal(unique.statusCode, 409, 'a unique violation is a 409')
  isErrorBody(t, unique.json(), 'CONFLICT')

  const foreign = await app.inject({ method: 'POST', url: '/api/test/orphan' })
  t.equal(foreign.statusCode, 400, 'a missing referenced row is a 400')
  isErrorBody(t, foreign.json(), 'VALIDATION_ERROR')
})

t.test('a value the database refuses names its field, or says what was refused: never an empty list', async t => {
  const app = await build(t, { routes })
  const check = await app.inject({ method: 'POST', url: '/api/test/families', payload: { name: '' } })
  t.same(check.json().details.issues, [{ path: '/body', message: 'a value breaks a rule of the database' }], 'a check without a column')
  const missing = await app.inject({ method: 'POST', url: '/api/test/raw-family', payload: { name: null } })
  t.equal(missing.statusCode, 400)
  t.same(missing.json().details.issues, [{ path: '/body/name', message: 'is required' }], 'a not-null column by its name')
  const nul = await app.inject({ method: 'POST', url: '/api/test/raw-family', payload: { name: 'a\u0000b' } })
  t.equal(nul.statusCode, 400)
  t.same(nul.json().details.issues, [{ path: '/body', message: 'a text holds a character the database cannot store' }], 'a NUL character')
  const date = await app.inject({ method: 'GET', url: '/api/test/raw-date?on=0000-01-01' })
  t.equal(date.statusCode, 400)
  t.same(date.json().details.issues, [{ path: '/query', message: 'a date or time is out of the range the database holds' }], 'a year the database cannot hold')
  const foreign = await app.inject({ method: 'POST', url: '/api/test/orphan', payload: {} })
  t.same(foreign.json().details.issues, [{ path: '/body/familyId', message: 'names a record that does not exist' }], 'a foreign key by its column')
})

t.test('an unreachable database is a 503 with Retry-After', async t => {
  const app = await build(t, { routes })
  const res = await app.inject({ method: 'GET', url: '/api/test/database-down' })
  t.equal(res.statusCode, 503)
  t.equal(res.headers['retry-after'], '5')
  isErrorBody(t, res.json(), 'SERVICE_UNAVAILABLE')
})

t.test('own errors keep their code; a 401 names the Bearer scheme', async t => {
  const app = await build(t, { routes })
  const unauthorized = await app.inject({ method: 'GET', url: '/api/test/unauthorized' })
  t.equal(unauthorized.statusCode, 401)
  t.equal(unauthorized.headers['www-authenticate'], 'Bearer')
  isErrorBody(t, unauthorized.json(), 'UNAUTHORIZED')
  const missing = await app.inject({ method: 'GET', url: '/api/test/not-found' })
  t.equal(missing.statusCode, 404)
  t.same(missing.json(), { error: 'Child not found', code: 'NOT_FOUND', details: {} })
})

t.test('a 500 outside production says what failed', async t => {
  const app = await build(t, { routes })
  const res = await app.inject({ method: 'GET', url: '/api/test/crash' })
  t.equal(res.statusCode, 500)
  t.equal(res.json().code, 'INTERNAL_ERROR')
  t.equal(res.json().error, 'secret cause at /srv/app/file.ts:12')
  t.same(res.json().details, { requestId: res.headers['x-request-id'] })
})

t.test('a 500 in production hides its cause', async t => {
  const logs: string[] = []
  const app = await build(t, { routes, logs, env: { NODE_ENV: 'production', BCRYPT_COST: '10', LOG_LEVEL: 'error' } })
  const res = await app.inject({ method: 'GET', url: '/api/test/crash', headers: { 'x-request-id': 'trace-500' } })
  t.equal(res.statusCode, 500)
  t.same(res.json(), { error: 'Internal server error', code: 'INTERNAL_ERROR', details: { requestId: 'trace-500' } })
  t.notMatch(res.body, /secret cause|file\.ts/)
  t.ok(logs.some(line => line.includes('secret cause') && line.includes('trace-500')), 'the cause is logged with the request id')
})

t.test('every response has a request id and the security headers', async t => {
  const app = await build(t, { routes })
  const given = await app.inject({ method: 'GET', url: '/api/health', headers: { 'x-request-id': 'proxy-id-123' } })
  t.equal(given.headers['x-request-id'], 'proxy-id-123', 'a valid proxy id is kept')
  const bad = await app.inject({ method: 'GET', url: '/api/health', headers: { 'x-request-id': 'bad id with spaces' } })
  t.match(bad.headers['x-request-id'], /^[0-9a-f-]{36}$/, 'an invalid one is replaced')
  const long = await app.inject({ method: 'GET', url: '/api/health', headers: { 'x-request-id': 'a'.repeat(65) } })
  t.not(long.headers['x-request-id'], 'a'.repeat(65))
  const none = await app.inject({ method: 'GET', url: '/api/health' })
  t.match(none.headers['x-request-id'], /^[0-9a-f-]{36}$/)
  for (const res of [given, await app.inject({ method: 'GET', url: '/api/none' }), await app.inject({ method: 'GET', url: '/api/test/crash' })]) {
    t.equal(res.headers['x-content-type-options'], 'nosniff')
    t.ok(res.headers['x-frame-options'])
    t.ok(res.headers['strict-transport-security'])
    t.ok(res.headers['x-request-id'])
  }
})

t.test('CORS only for the configured origins', async t => {
  const app = await build(t, { routes, env: { CORS_ORIGIN: 'https://app.example.org' } })
  const allowed = await app.inject({
    method: 'OPTIONS',
    url: '/api/health',
    headers: { origin: 'https://app.example.org', 'access-control-request-method': 'GET' }
  })
  t.equal(allowed.headers['access-control-allow-origin'], 'https://app.example.org')
  const simple = await app.inject({ method: 'GET', url: '/api/health', headers: { origin: 'https://app.example.org' } })
  t.equal(simple.headers['access-control-allow-origin'], 'https://app.example.org')
  t.match(String(simple.headers['access-control-expose-headers']), /X-Request-Id/)
  t.match(String(simple.headers['access-control-expose-headers']), /Location/)
  t.match(String(simple.headers['access-control-expose-headers']), /Retry-After/)
  t.match(String(simple.headers['access-control-expose-headers']), /Idempotent-Replayed/, 'a browser client sees that an answer was replayed')
  const keyed = await app.inject({
    method: 'OPTIONS',
    url: '/api/children',
    headers: { origin: 'https://app.example.org', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type,idempotency-key' }
  })
  t.match(String(keyed.headers['access-control-allow-headers']), /Idempotency-Key/, 'and may send a key')
  const other = await app.inject({ method: 'GET', url: '/api/health', headers: { origin: 'https://evil.example.com' } })
  t.notOk(other.headers['access-control-allow-origin'], 'another origin gets no CORS header')

  const none = await build(t, { routes })
  const closed = await none.inject({ method: 'GET', url: '/api/health', headers: { origin: 'https://app.example.org' } })
  t.notOk(closed.headers['access-control-allow-origin'], 'no origin is allowed by default')
})

t.test('an enum names its allowed values, a date is one message in words, never a regular expression', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open' } })
  const reg = await register(app, { email: 'words@example.org', name: 'Words' })
  const headers = bearer(reg.accessToken)
  const child = await app.inject({ method: 'POST', url: '/api/children', headers, payload: { name: 'Kim', dateOfBirth: '2022-03-15', sex: 'female' } })
  const childId = child.json().id as number
  const visit = await app.inject({ method: 'POST', url: `/api/children/${childId}/visits`, headers, payload: { date: '2023-01-01', type: 'checkup' } })
  t.equal(visit.statusCode, 400)
  t.same(visit.json().details.issues, [{ path: '/body/type', message: 'must be one of wellness, sick, injury, vision, dental' }])
  for (const date of ['2023-13-01', '01/02/2023', '2023-1-1', 'yesterday']) {
    const res = await app.inject({ method: 'POST', url: `/api/children/${childId}/visits`, headers, payload: { date, type: 'sick' } })
    t.equal(res.statusCode, 400, date)
    t.same(res.json().details.issues, [{ path: '/body/date', message: 'must be a date YYYY-MM-DD' }], `${date}: one message, in words`)
    t.notMatch(res.body, /\\d|pattern|format/, 'no regular expression and no rule name')
  }
  const sex = await app.inject({ method: 'POST', url: '/api/children', headers, payload: { name: 'Lee', dateOfBirth: '2022-03-15', sex: 'x' } })
  t.same(sex.json().details.issues, [{ path: '/body/sex', message: 'must be one of female, male, other' }])
  const query = await app.inject({ method: 'GET', url: `/api/children/${childId}/visits?from=2023-02-30x`, headers })
  t.same(query.json().details.issues, [{ path: '/query/from', message: 'must be a date YYYY-MM-DD' }], 'in a query string too')
})
