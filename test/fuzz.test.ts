import t from 'tap'
import fc from 'fast-check'
import { build, bearer, register } from './helper'
import { concrete, fixture, injectRoute, sample, tableCounts } from './route-samples'

/**
 * Arbitrary and hostile input for every JSON or CSV route: never a 5xx,
 * always the error body, and a refused write changes nothing.
 */

const RUNS = Number(process.env.FUZZ_RUNS ?? 20)

const hostileString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 50 }),
  fc.constantFrom(
    "'; drop table children; --", '" or 1=1 --', '\u0000', '\u202e\u0000evil', '😀'.repeat(300), '%00', '../../etc/passwd',
    '2023-02-30', '2023-13-01', '0000-00-00', '9999-12-31', '-1', '1e309', 'NaN', 'null', '{}', '<script>alert(1)</script>',
    'x'.repeat(20000), ' '.repeat(10), '__proto__', 'constructor'
  )
)

const hostileNumber = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -1, 2147483648, -2147483649, Number.MAX_SAFE_INTEGER, 1e308, -0, 0.1 + 0.2, 3.14159265358979)
)

const leaf = fc.oneof(hostileString, hostileNumber, fc.boolean(), fc.constant(null), fc.constant([]), fc.constant({}))

function deep (depth: number): unknown {
  let value: unknown = 'bottom'
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? { a: value } : [value]
  return value
}

/** Bodies built from the route's own field names, with hostile values and extra keys. */
function bodies (fields: string[]): fc.Arbitrary<unknown> {
  const keys = fc.constantFrom(...fields, '__proto__', 'constructor', 'prototype', 'id', 'childId', 'familyId', 'role', 'x'.repeat(300))
  return fc.oneof(
    fc.dictionary(keys, fc.oneof(leaf, fc.dictionary(fc.string(), leaf, { maxKeys: 3 })), { maxKeys: 8 }),
    fc.anything({ maxDepth: 3 }),
    fc.constant(deep(200)),
    leaf
  )
}

const csvCell = fc.oneof(
  hostileString,
  hostileNumber.map(String),
  fc.constantFrom('', '"', '""', '"a""b"', '"open', '3,5', '"3,5"', '1e3', '0x10', 'Infinity', '\r\n', '\n', ';', ',', '2022-01-01', '\uFEFF', ' 3 ')
)
const csvColumn = fc.constantFrom('measuredAt', 'heightCm', 'weightKg', 'headCircumferenceCm', 'notes', 'visitId', 'childId', '__proto__', 'constructor', '', 'x'.repeat(300))

/** CSV files: any text, files of hostile headers and cells with either separator and any line ending, and the route's sample. */
function csvFiles (sample: string): fc.Arbitrary<string> {
  const file = fc.tuple(
    fc.array(csvColumn, { minLength: 1, maxLength: 7 }),
    fc.array(fc.array(csvCell, { maxLength: 8 }), { maxLength: 6 }),
    fc.constantFrom(',', ';'),
    fc.constantFrom('\n', '\r\n', '\r')
  ).map(([header, rows, separator, newline]) => [header.join(separator), ...rows.map(row => row.join(separator))].join(newline))
  const cut = fc.nat({ max: sample.length }).map(at => sample.slice(0, at))
  return fc.oneof(fc.string(), fc.string({ unit: 'binary' }), file, cut, fc.constant(sample))
}

const queries = fc.dictionary(
  fc.constantFrom('limit', 'offset', 'sort', 'from', 'to', 'type', 'status', 'childId', 'familyId', 'q', 'sex', 'step', 'format', 'visitId'),
  fc.oneof(hostileString, hostileNumber.map(String)),
  { maxKeys: 5 }
)

t.test('hostile bodies and query strings for every JSON route', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open' } })
  const admin = await register(app)
  const owner = await register(app)
  const member = await register(app)
  const viewer = await register(app)
  const f = await fixture(app, { owner: owner.user.id, member: member.user.id, viewer: viewer.user.id })
  const doc = app.swagger() as { paths: Record<string, Record<string, any>> }

  let cases = 0
  const failures: string[] = []
  for (const [url, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const route = `${method.toUpperCase()} ${url}`
      const json = op.requestBody?.content?.['application/json']?.schema
      if (method === 'get' || json === undefined) continue
      if (route === 'POST /api/auth/logout' || route === 'POST /api/me/password' || route.startsWith('DELETE')) continue
      const token = url.startsWith('/api/admin') ? admin.accessToken : owner.accessToken
      const fields = Object.keys(json.properties ?? {})
      const target = concrete(route, f)
      await fc.assert(fc.asyncProperty(bodies(fields), async body => {
        cases += 1
        const before = await tableCounts(app)
        const res = await app.inject({
          method: method.toUpperCase() as 'POST',
          url: target,
          headers: { ...bearer(token), 'content-type': 'application/json' },
          payload: JSON.stringify(body) ?? ''
        })
        if (res.statusCode >= 500) failures.push(`${route} ${JSON.stringify(body)?.slice(0, 200)} → ${res.statusCode} ${res.body.slice(0, 200)}`)
        if (res.statusCode >= 400) {
          const answer = res.json()
          const shaped = typeof answer.error === 'string' && typeof answer.code === 'string' && typeof answer.details === 'object' && answer.details !== null
          if (!shaped) failures.push(`${route}: not the error body: ${res.body.slice(0, 200)}`)
          if (/\n\s+at .+:\d+:\d+/.test(res.body)) failures.push(`${route}: a stack trace in the body`)
          if (await tableCounts(app) !== before) failures.push(`${route}: a refused write changed something: ${JSON.stringify(body)?.slice(0, 200)}`)
        }
        return res.statusCode < 500
      }), { numRuns: RUNS, seed: 20261122, endOnFailure: true })
    }
  }

  let csvRoutes = 0
  for (const [url, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const route = `${method.toUpperCase()} ${url}`
      if (op.requestBody?.content?.['text/csv'] === undefined) continue
      csvRoutes += 1
      const target = concrete(route, f)
      await fc.assert(fc.asyncProperty(csvFiles(sample(route, f)?.csv ?? ''), fc.boolean(), async (csv, dryRun) => {
        cases += 1
        const before = await tableCounts(app)
        const res = await app.inject({
          method: method.toUpperCase() as 'POST',
          url: `${target}?dryRun=${dryRun}`,
          headers: { ...bearer(owner.accessToken), 'content-type': 'text/csv' },
          payload: csv
        })
        if (res.statusCode >= 500) failures.push(`${route} ${JSON.stringify(csv).slice(0, 200)} → ${res.statusCode} ${res.body.slice(0, 200)}`)
        if (res.statusCode >= 400) {
          const answer = res.json()
          const shaped = typeof answer.error === 'string' && typeof answer.code === 'string' && typeof answer.details === 'object' && answer.details !== null
          if (!shaped) failures.push(`${route}: not the error body: ${res.body.slice(0, 200)}`)
          if (await tableCounts(app) !== before) failures.push(`${route}: a refused file changed something: ${JSON.stringify(csv).slice(0, 200)}`)
        }
        return res.statusCode < 500
      }), { numRuns: RUNS * 5, seed: 20261122, endOnFailure: true })
    }
  }

  for (const [url, item] of Object.entries(doc.paths)) {
    if (item.get === undefined || url.includes('openapi') || url.startsWith('/api/docs')) continue
    const route = `GET ${url}`
    const token = url.startsWith('/api/admin') ? admin.accessToken : owner.accessToken
    const base = concrete(route, f)
    const defaults = new URLSearchParams(sample(route, f)?.query ?? '')
    await fc.assert(fc.asyncProperty(queries, async query => {
      cases += 1
      const params = new URLSearchParams(defaults)
      for (const [key, value] of Object.entries(query)) params.set(key, value)
      const res = await injectRoute(app, { method: 'GET', url: `${base}?${params.toString()}`, headers: bearer(token) })
      if (res.statusCode >= 500 && res.json().code !== 'GROWTH_DATA_MISSING') failures.push(`${route}?${params} → ${res.statusCode} ${res.body.slice(0, 200)}`)
      return res.statusCode < 500
    }), { numRuns: RUNS, seed: 20261122, endOnFailure: true })
  }

  const raw = ['{"__proto__":{"admin":true}}', '{"constructor":{"prototype":{"admin":true}}}', '{"a":', '[]', '"text"', '1e999', '{"name":"\\ud800"}']
  for (const payload of raw) {
    const res = await app.inject({ method: 'POST', url: '/api/families', headers: { ...bearer(owner.accessToken), 'content-type': 'application/json' }, payload })
    cases += 1
    t.ok(res.statusCode === 400 || res.statusCode === 201, `${payload}: ${res.statusCode}`)
  }
  t.equal(({} as Record<string, unknown>).admin, undefined, 'no prototype was polluted')

  t.ok(csvRoutes > 0, `${csvRoutes} CSV routes fuzzed`)
  t.same(failures, [], 'no 5xx, always the error body, and refused writes change nothing')
  t.ok(cases > 500, `${cases} fuzz cases run`)
})
