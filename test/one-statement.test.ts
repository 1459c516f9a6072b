import t from 'tap'
import { Type } from '@sinclair/typebox'
import { IsoDate } from '../lib/schemas'
import { measurementKind } from '../kinds/measurements'
import { createInStatement, inStatement, valuesOf } from '../routes/records/one-statement'
import { build, call, household, register, type App } from './helper'

/**
 * A create of the test's own, decided in one statement like the records'
 * creates, but for owners only: the role the route names is the one the
 * statement checks.
 */
function ownersOnly (app: App): void {
  const scope = { target: { child: 'params.childId' }, name: 'Child', role: 'owner' } as const
  const creates = createInStatement(app, measurementKind, scope)
  app.post('/api/test/children/:childId/owner-measurements', {
    onRequest: app.authenticate,
    config: inStatement(scope),
    preHandler: creates.preHandler,
    schema: {
      params: Type.Object({ childId: Type.Integer() }),
      body: Type.Object({ measuredAt: IsoDate, weightKg: Type.Number() }, { additionalProperties: false }),
      response: { 201: Type.Object({ id: Type.Integer(), weightKg: Type.Number() }) }
    }
  }, async (request, reply) => reply.code(201).send(await creates.create(request, valuesOf(request)) as { id: number, weightKg: number }))
}

async function rowsOf (app: App, childId: number): Promise<{ measurements: number, changes: number }> {
  const [row] = await app.sql<Array<{ measurements: number, changes: number }>>`
    select (select count(*) from measurements where child_id = ${childId})::int as measurements,
           (select count(*) from changes where child_id = ${childId})::int as changes
  `
  return row
}

/** An owner, a member and a viewer of one family, and its child. */
async function family (app: App) {
  const { owner, member, viewer } = await household(app, { member: 'member', viewer: 'viewer' })
  const child = (await call(app, owner, 'POST', '/api/children', { name: 'Ada', dateOfBirth: '2022-01-10', sex: 'female' })).json()
  return { owner, member, viewer, child }
}

t.test('a one-statement create for owners refuses a member and a viewer with 403 and writes nothing', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open' }, routes: ownersOnly })
  const { owner, member, viewer, child } = await family(app)
  const url = `/api/test/children/${child.id as number}/owner-measurements`
  const before = await rowsOf(app, child.id)

  for (const [who, pair] of [['member', member], ['viewer', viewer]] as const) {
    const res = await call(app, pair, 'POST', url, { measuredAt: '2023-01-10', weightKg: 9.5 })
    t.equal(res.statusCode, 403, `a ${who} is refused`)
    t.equal(res.json().code, 'FORBIDDEN')
    t.same(await rowsOf(app, child.id), before, `nothing written for a ${who}, no change recorded`)
  }

  const stranger = await register(app)
  t.equal((await call(app, stranger, 'POST', url, { measuredAt: '2023-01-10', weightKg: 9.5 })).statusCode, 403, 'one of another family is refused')
  t.equal((await call(app, owner, 'POST', '/api/test/children/999999/owner-measurements', { measuredAt: '2023-01-10', weightKg: 9.5 })).statusCode, 404, 'a child that does not exist is a 404')
  t.same(await rowsOf(app, child.id), before, 'still nothing written')

  const early = await call(app, owner, 'POST', url, { measuredAt: '2021-01-10', weightKg: 9.5 })
  t.equal(early.statusCode, 400, 'a date before the birth is a 400 for the owner')
  t.match(early.json().details.issues, [{ path: '/body/measuredAt' }])
  t.same(await rowsOf(app, child.id), before, 'and nothing is written')

  const created = await call(app, owner, 'POST', url, { measuredAt: '2023-01-10', weightKg: 9.5 })
  t.equal(created.statusCode, 201, 'the owner writes')
  t.equal(created.json().weightKg, 9.5)
  t.same(await rowsOf(app, child.id), { measurements: before.measurements + 1, changes: before.changes + 1 }, 'one row, one change')
})

t.test('the records\' one-statement creates still let a member write and refuse a viewer', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open' } })
  const { member, viewer, child } = await family(app)
  const url = `/api/children/${child.id as number}/measurements`
  const before = await rowsOf(app, child.id)
  t.equal((await call(app, viewer, 'POST', url, { measuredAt: '2023-01-10', weightKg: 9.5 })).statusCode, 403, 'a viewer is refused')
  t.same(await rowsOf(app, child.id), before, 'nothing written')
  t.equal((await call(app, member, 'POST', url, { measuredAt: '2023-01-10', weightKg: 9.5 })).statusCode, 201, 'a member writes')
})

t.test('a record\'s list and its plain create each take one statement: the session, the family scope and the answer or the insert', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open' } })
  const { member, child } = await family(app)
  const statements: string[] = []
  const pools: string[] = []
  // Left out: the announcement a write sends once it has answered, and the
  // type lookup postgres.js makes once on each new connection of a pool.
  const own = /^(select pg_notify\(|select b\.oid, b\.typarray)/
  for (const [name, pool] of [['request', app.sql], ['lookup', app.lookups]] as const) {
    const options = pool.options as unknown as { debug: unknown }
    options.debug = (_connection: number, text: string) => {
      if (own.test(text.trimStart())) return
      statements.push(text)
      pools.push(name)
    }
    t.teardown(() => { options.debug = false })
  }
  const counted = async (send: () => Promise<{ statusCode: number, headers: Record<string, unknown> }>, status: number, what: string, pool: string) => {
    statements.length = 0
    pools.length = 0
    const res = await send()
    t.equal(res.statusCode, status, what)
    t.equal(statements.length, 1, `${what}: one statement`, { statements: statements.map(text => text.slice(0, 120)) })
    t.same(pools, [pool], `on the ${pool} pool`)
    return res
  }

  await counted(() => call(app, member, 'POST', `/api/children/${child.id as number}/measurements`, { measuredAt: '2023-01-10', weightKg: 9.5 }), 201, 'a create under the child', 'request')
  await counted(() => call(app, member, 'POST', '/api/measurements', { childId: child.id, measuredAt: '2023-02-10', weightKg: 9.9 }), 201, 'a create naming its child in the body', 'request')
  const list = await counted(() => call(app, member, 'GET', `/api/children/${child.id as number}/measurements`), 200, 'a list', 'request')
  // Only the session and the scope are read when the client holds an answer: a short read, on the lookup pool.
  await counted(() => call(app, member, 'GET', `/api/children/${child.id as number}/measurements`, undefined, { 'if-none-match': list.headers.etag as string }), 304, 'a list whose ETag the client holds', 'lookup')
})
