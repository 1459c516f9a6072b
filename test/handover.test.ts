import t from 'tap'
import { inTransaction, type Handed } from '../db/handover'
import { bearer, build, call, familyOf, got, made, register, testDatabase } from './helper'

// A transaction is handed to the code that runs in it (db/handover.ts):
// effects wait for the outermost commit, are dropped on a rollback, and
// savepoints nest.

const count = async (handed: Handed | { sql: Handed['sql'] }, name: string): Promise<number> =>
  (await handed.sql<Array<{ n: number }>>`select count(*)::int as n from pg_catalog.pg_class where relname = ${name}`)[0].n

t.test('effects run after the outermost commit, in their order, and not before', async t => {
  const { sql } = await testDatabase(t)
  const ran: string[] = []
  await inTransaction(sql, async outer => {
    await outer.afterCommit(() => { ran.push('outer') })
    await inTransaction(outer, async inner => {
      await inner.afterCommit(() => { ran.push('inner') })
      await inner.sql`select 1`
    })
    t.same(ran, [], 'a released savepoint runs nothing: its effects wait for the outermost commit')
  })
  t.same(ran, ['outer', 'inner'])
})

t.test('a rollback drops its effects, a savepoint\'s as well as the transaction\'s', async t => {
  const { sql } = await testDatabase(t)
  const ran: string[] = []
  await t.rejects(inTransaction(sql, async outer => {
    await outer.afterCommit(() => { ran.push('outer') })
    await inTransaction(outer, async inner => { await inner.afterCommit(() => { ran.push('inner') }) })
    throw new Error('rolled back')
  }), /rolled back/)
  t.same(ran, [], 'nothing of a rolled-back transaction runs')

  await inTransaction(sql, async outer => {
    await outer.afterCommit(() => { ran.push('kept') })
    await t.rejects(inTransaction(outer, async inner => {
      await inner.afterCommit(() => { ran.push('dropped') })
      throw new Error('savepoint rolled back')
    }))
  })
  t.same(ran, ['kept'], 'a savepoint rolled back drops its own effects only')
})

t.test('an effect asked for once its transaction has ended runs at once after a commit, never after a rollback', async t => {
  const { sql } = await testDatabase(t)
  const ran: string[] = []
  let committed!: Handed
  await inTransaction(sql, async handed => { committed = handed })
  await committed.afterCommit(() => { ran.push('late') })
  let rolledBack!: Handed
  await t.rejects(inTransaction(sql, async handed => { rolledBack = handed; throw new Error('no') }))
  await rolledBack.afterCommit(() => { ran.push('never') })
  t.same(ran, ['late'])
})

t.test('savepoints nest: the handed sql runs in the transaction and its begin is a savepoint there', async t => {
  const { sql } = await testDatabase(t)
  const name = `handover_probe_${process.pid}`
  await t.rejects(inTransaction(sql, async outer => {
    await outer.sql.unsafe(`create table ${name} (id int)`)
    t.equal(await count(outer, name), 1, 'the handed sql sees the transaction\'s own work')
    t.equal(await count({ sql }, name), 0, 'the pool does not see it before the commit')
    await t.rejects(outer.sql.begin(async tx => {
      await tx.unsafe(`drop table ${name}`)
      t.equal(await count(outer, name), 0)
      throw new Error('back to the savepoint')
    }))
    t.equal(await count(outer, name), 1, 'a begin of the handed sql rolled back to its savepoint only')
    await inTransaction(outer, async inner => {
      t.equal(inner.parent, outer)
      await inTransaction(inner, async innermost => { t.equal(await count(innermost, name), 1) })
    })
    throw new Error('rolled back')
  }))
  t.equal(await count({ sql }, name), 0, 'nothing of it committed')
})

t.test('a batch\'s family is handed on to the savepoints made in its transaction', async t => {
  const { sql } = await testDatabase(t)
  await inTransaction(sql, async outer => {
    t.equal(outer.familyId, 7)
    await inTransaction(outer, async inner => { t.equal(inner.familyId, 7) })
  }, { familyId: 7 })
  await inTransaction(sql, async handed => { t.equal(handed.familyId, null) })
})

t.test('the header that hands a batch\'s transaction over cannot be forged', async t => {
  const app = await build(t)
  const owner = await register(app)
  const body = { name: 'Kim', dateOfBirth: '2024-03-15', sex: 'female', familyId: familyOf(owner) }
  const forged = await app.inject({
    method: 'POST', url: '/api/children', headers: { ...bearer(owner.accessToken), 'x-handed-transaction': 'guessed' }, payload: body
  })
  t.equal(forged.statusCode, 400, 'a token the service does not hold is refused')
  t.equal(forged.json().details.issues[0].path, '/headers/x-handed-transaction')

  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address() as { port: number }
  const res = await fetch(`http://127.0.0.1:${address.port}/api/children`, {
    method: 'POST',
    headers: { ...bearer(owner.accessToken), 'content-type': 'application/json', 'x-handed-transaction': 'guessed' },
    body: JSON.stringify(body)
  })
  t.equal(res.status, 400, 'the header is refused from a real connection')
  const list = await app.inject({ method: 'GET', url: '/api/children', headers: bearer(owner.accessToken) })
  t.equal(list.json().data.length, 0, 'nothing was written')
})

t.test('an atomic batch\'s operations see what those before them wrote, in their family checks too', async t => {
  const app = await build(t)
  const owner = await register(app)
  const familyId = familyOf(owner)
  const child = await made(app, owner, '/api/children', { name: 'Kim', dateOfBirth: '2024-03-15', sex: 'female', familyId })
  const m = await made(app, owner, `/api/children/${child.id as number}/measurements`, { measuredAt: '2024-06-01', weightKg: 7 })
  const res = await call(app, owner, 'POST', `/api/families/${familyId}/batch`, {
    atomic: true,
    operations: [
      { method: 'PATCH', path: `/api/measurements/${m.id as number}`, body: { notes: 'first' }, ifMatch: '"1"' },
      { method: 'PATCH', path: `/api/measurements/${m.id as number}`, body: { notes: 'second' }, ifMatch: '"2"' }
    ]
  })
  t.equal(res.statusCode, 200)
  t.same(res.json().results.map((result: { status: number }) => result.status), [200, 200], 'the second sees the version the first wrote')
  t.equal(res.json().rolledBack, false)
  const now = await got(app, owner, `/api/measurements/${m.id as number}`)
  t.same([now.version, now.notes], [3, 'second'])
})
