import t, { type Test } from 'tap'
import { nestedDeeperThan } from '../lib/json-depth'
import { build, call, familyOf, made, register } from './helper'

const DEEP = 150_000
const LIMIT = 64

/** JSON text of arrays nested `depth` deep around `inner`. */
const arrays = (depth: number, inner = ''): string => '['.repeat(depth) + inner + ']'.repeat(depth)
/** JSON text of objects nested `depth` deep around `inner`. */
const objects = (depth: number, inner = '1'): string => '{"a":'.repeat(depth) + inner + '}'.repeat(depth)

async function setup (t: Test) {
  const app = await build(t, { env: { REGISTRATION: 'open' } })
  const owner = await register(app)
  const familyId = familyOf(owner)
  const child = await made(app, owner, '/api/children', { name: 'Kim', dateOfBirth: '2022-03-01', sex: 'female', familyId })
  const count = async (): Promise<number> => (await app.sql`select count(*)::int as n from measurements where child_id = ${child.id}`)[0].n
  const send = (url: string, text: string, headers: Record<string, string> = {}) =>
    call(app, owner, 'POST', url, text, { 'content-type': 'application/json', ...headers })
  return { app, owner, familyId, child, count, send, measurements: `/api/children/${child.id}/measurements` }
}

function refusedAsTooDeep (t: Test, res: { statusCode: number, json: () => any, body: string }, what: string): void {
  t.equal(res.statusCode, 400, `${what}: ${res.body.slice(0, 200)}`)
  t.same(res.json(), {
    error: `The body nests objects and arrays more than ${LIMIT} levels deep`,
    code: 'INVALID_BODY',
    details: { maxDepth: LIMIT }
  }, `${what}: the contract's error body says the limit`)
}

t.test('a body nested 150,000 deep is a 400 INVALID_BODY, with and without an Idempotency-Key, at the top or in a batch operation', async t => {
  const { familyId, count, send, measurements } = await setup(t)
  const operation = (body: string): string => `{"atomic":true,"operations":[{"method":"POST","path":"${measurements}","body":${body}}]}`
  const batch = `/api/families/${familyId}/batch`
  const cases: Array<[string, string, string]> = [
    ['arrays at the top', measurements, arrays(DEEP)],
    ['objects at the top', measurements, objects(DEEP)],
    ['objects in a field', measurements, `{"measuredAt":"2024-01-01","notes":${objects(DEEP)}}`],
    ['arrays in a batch operation\'s body', batch, operation(arrays(DEEP))],
    ['objects in a batch operation\'s body', batch, operation(objects(DEEP))]
  ]
  for (const [what, url, text] of cases) {
    refusedAsTooDeep(t, await send(url, text), what)
    refusedAsTooDeep(t, await send(url, text, { 'idempotency-key': `deep ${what}` }), `${what}, with an Idempotency-Key`)
  }
  t.equal(await count(), 0, 'nothing was written')
  const fine = await send(measurements, JSON.stringify({ measuredAt: '2024-01-01', weightKg: 10 }), { 'idempotency-key': 'deep arrays at the top' })
  t.equal(fine.statusCode, 201, 'the refused body kept nothing of its key: the key runs a request afresh')
})

t.test('the limit counts levels of objects and arrays, not brackets inside strings', async t => {
  const { familyId, count, send, measurements } = await setup(t)
  // The body itself is a level: notes nested LIMIT - 1 deep make LIMIT levels in all.
  const atLimit = await send(measurements, `{"measuredAt":"2024-01-01","notes":${arrays(LIMIT - 1)}}`)
  t.equal(atLimit.statusCode, 400)
  t.equal(atLimit.json().code, 'VALIDATION_ERROR', `${LIMIT} levels are read, then validated: ${atLimit.body.slice(0, 200)}`)
  refusedAsTooDeep(t, await send(measurements, `{"measuredAt":"2024-01-01","notes":${arrays(LIMIT)}}`), `${LIMIT + 1} levels`)
  refusedAsTooDeep(t, await send(measurements, `{"measuredAt":"2024-01-01","notes":${objects(LIMIT)}}`), `${LIMIT + 1} levels of objects`)

  const brackets = `[{ \\"quoted [[{{ ${'['.repeat(3000)}${'{'.repeat(3000)}`
  const written = await send(measurements, `{"measuredAt":"2024-01-01","weightKg":10,"notes":"${brackets}"}`)
  t.equal(written.statusCode, 201, `brackets in a string are text: ${written.body.slice(0, 200)}`)
  t.equal(written.json().notes, JSON.parse(`"${brackets}"`))
  const escaped = await send(measurements, `{"measuredAt":"2024-01-01","weightKg":10,"notes":"a \\\\"}`)
  t.equal(escaped.statusCode, 201, 'a string ending in an escaped backslash ends there')

  // A batch of LIMIT levels: each operation's body, LIMIT - 3 levels of its own, is read and validated as its own request.
  const deepest = `{"operations":[{"method":"POST","path":"${measurements}","body":{"measuredAt":"2024-01-01","notes":${arrays(LIMIT - 4)}}}]}`
  const batch = await send(`/api/families/${familyId}/batch`, deepest)
  t.equal(batch.statusCode, 200, batch.body.slice(0, 200))
  t.equal(batch.json().results[0].status, 400)
  t.equal(batch.json().results[0].body.code, 'VALIDATION_ERROR')
  refusedAsTooDeep(t, await send(`/api/families/${familyId}/batch`, deepest.replace('"notes":[', '"notes":[[').replace(/]}}]}$/, ']]}}]}')), `a batch of ${LIMIT + 1} levels`)
  t.equal(await count(), 2)
})

t.test('the scan reads strings as JSON writes them, escapes included, and leaves what is not JSON to the parser', async t => {
  const cases: Array<[string, number, boolean]> = [
    ['[]', 1, false], ['[[]]', 1, true], ['{"a":[]}', 1, true], ['"[[["', 0, false],
    ['["\\\\"]', 1, false], ['["\\\\", [1]]', 1, true], ['["\\"[", 1]', 1, false],
    ['{"a":{"b":"}}}{{{"}}', 2, false], ['{"a":{"b":"}}}{{{"}}', 1, true],
    ['"\\', 0, false], ['"open', 0, false], ['[[[', 2, true], [']]]', 0, false]
  ]
  for (const [text, limit, deeper] of cases) t.equal(nestedDeeperThan(text, limit), deeper, `${text} past ${limit}`)
})
