import t, { type Test } from 'tap'
import { build, call, changesSince, familyOf, made, register, type App, type Pair } from './helper'

// The time limit of the operations of a batch that share one transaction.

type Json = any

async function family (app: App): Promise<{ owner: Pair, familyId: number, childId: number }> {
  const owner = await register(app)
  const familyId = familyOf(owner)
  const child = await made(app, owner, '/api/children', { name: 'Kim', dateOfBirth: '2022-03-01', sex: 'female', familyId })
  return { owner, familyId, childId: child.id }
}

async function setup (t: Test, limitMs: number, env: Record<string, string> = {}) {
  const app = await build(t, { env: { REGISTRATION: 'open', BATCH_ATOMIC_TIMEOUT_MS: String(limitMs), ...env } })
  const a = await family(app)
  const b = await family(app)
  const counts = async () => {
    const [row] = await app.sql<Array<{ measurements: number, changes: number }>>`
      select (select count(*)::int from measurements where child_id = ${a.childId}) as measurements,
             (select count(*)::int from changes where family_id = ${a.familyId}) as changes
    `
    return row
  }
  const creates = (n: number, notes = 'queued') => Array.from({ length: n }, (_, i) => ({
    method: 'POST', path: `/api/children/${a.childId}/measurements`, body: { measuredAt: '2024-01-01', weightKg: 10, notes: `${notes} ${i}` }
  }))
  const batch = (body: unknown, headers: Record<string, string> = {}) => call(app, a.owner, 'POST', `/api/families/${a.familyId}/batch`, body, headers)
  return { app, a, b, counts, creates, batch }
}

function tooLong (t: Test, res: { statusCode: number, json: () => Json, body: string }, limitMs: number, operations: number): number {
  t.equal(res.statusCode, 422, res.body.slice(0, 300))
  const body = res.json()
  t.equal(body.code, 'BATCH_TOO_LONG')
  const { operation } = body.details
  t.same(body.details, { limitMs, operation, operations }, 'details: the limit, the operation it reached, how many there were')
  t.ok(Number.isInteger(operation) && operation >= 0 && operation < operations)
  t.equal(body.error, `The batch ran past its limit of ${limitMs} ms at operation ${operation} of its ${operations} (counted from 0), and nothing was written: send its operations in smaller batches`)
  return operation
}

t.test('an atomic batch past its limit rolls back whole with 422 BATCH_TOO_LONG; another family\'s write meanwhile reaches its feed', async t => {
  const { app, b, counts, creates, batch } = await setup(t, 50)
  const before = await counts()
  const mark = await changesSince(app, b.owner, b.familyId, null)
  let batchAnswered = false
  const sent = batch({ atomic: true, operations: creates(500) }).then(res => { batchAnswered = true; return res })
  const theirs = await made(app, b.owner, `/api/children/${b.childId}/measurements`, { measuredAt: '2024-01-01', weightKg: 12 })
  t.notOk(batchAnswered, 'another family\'s write, sent while the batch ran, answered before it')
  const res = await sent
  tooLong(t, res, 50, 500)
  t.same(await counts(), before, 'nothing written, no change recorded')
  const feed = await changesSince(app, b.owner, b.familyId, mark.next)
  t.same(feed.data.map((change: Json) => [change.kind, change.op, change.id]), [['measurement', 'created', theirs.id]], 'the other family\'s change is in its feed')
  // Not atomic, so not under the 50 ms limit, which a loaded machine may pass with one write.
  const after = await batch({ atomic: false, operations: creates(1) })
  t.equal(after.statusCode, 200, 'the family writes on')
  t.same(after.json().results.map((result: Json) => result.status), [201], 'its write is created')
})

/** A write of notes 'slow' takes 3 s in the database, through a trigger of the test's own database. */
async function slowNotes (app: App): Promise<void> {
  await app.sql.unsafe(`
    create function slow_note() returns trigger language plpgsql as $$
    begin
      if new.notes = 'slow' then perform pg_sleep(3); end if;
      return new;
    end $$;
    create trigger slow_note before insert on measurements for each row execute function slow_note();
  `)
}

t.test('a statement of the batch longer than the limit is cut at the limit', async t => {
  const { app, counts, creates, batch } = await setup(t, 300)
  await slowNotes(app)
  const before = await counts()
  const operations = [...creates(1).map(op => ({ ...op, body: { ...op.body, notes: 'slow' } })), ...creates(3)]
  const operation = tooLong(t, await batch({ atomic: true, operations }), 300, 4)
  t.equal(operation, 0, 'the slow statement itself was cut: the batch did not go on to the next operation')
  t.same(await counts(), before)
  const keyed = await batch({ operations }, { 'idempotency-key': 'slow-batch' })
  t.equal(tooLong(t, keyed, 300, 4), 0, 'so is one of a batch whose operations share its Idempotency-Key\'s transaction')
  t.same(await counts(), before)
})

t.test('a limit longer than DB_STATEMENT_TIMEOUT leaves the connections\' own statement limit as it is', async t => {
  const { app, counts, creates, batch } = await setup(t, 5000, { DB_STATEMENT_TIMEOUT: '1' })
  await slowNotes(app)
  const before = await counts()
  const res = await batch({ atomic: true, operations: [...creates(1).map(op => ({ ...op, body: { ...op.body, notes: 'slow' } })), ...creates(2)] })
  t.equal(res.statusCode, 200, res.body.slice(0, 300))
  t.same(res.json().results.map((result: Json) => result.status), [503, 424, 424], 'the slow write is cut after 1 s, as any statement is, well within the batch\'s limit')
  t.equal(res.json().rolledBack, true)
  t.same(await counts(), before)
})

t.test('a batch with an Idempotency-Key shares one transaction and has the limit; one without, not atomic, has none', async t => {
  const { counts, creates, batch } = await setup(t, 50)
  const before = await counts()
  const keyed = await batch({ atomic: false, operations: creates(500) }, { 'idempotency-key': 'long-batch' })
  tooLong(t, keyed, 50, 500)
  t.same(await counts(), before, 'nothing of it was written')
  const again = await batch({ atomic: false, operations: creates(500) }, { 'idempotency-key': 'long-batch' })
  t.equal(again.headers['idempotent-replayed'], 'true', 'its answer is kept for its key, as any 4xx')
  t.same(again.json(), keyed.json())

  const free = await batch({ atomic: false, operations: creates(500) })
  t.equal(free.statusCode, 200, 'each operation commits on its own: no limit')
  t.ok(free.json().results.every((result: Json) => result.status === 201))
  t.equal((await counts()).measurements, before.measurements + 500)
})
