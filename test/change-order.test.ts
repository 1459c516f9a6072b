import t, { type Test } from 'tap'
import type { AddressInfo } from 'node:net'
import { bearer, build, call, familyOf, readBlocks, register, transactionsSettled, type App, type Pair } from './helper'

// The order of a family's changes while its writers commit concurrently and
// out of order: writers never wait for each other, and the feed and the
// streams still give every change once, in one order, none skipped.
// Test files beside this one write on the same server, and the feed waits
// for their transactions too: a read that expects everything written so far
// waits for them first (settled).

const OPEN = { REGISTRATION: 'open' }
const DAY = '2024-03-01'

interface Setup {
  app: App & { db: { sql: App['sql'] } }
  owner: Pair
  familyId: number
  childId: number
}

async function setup (t: Test): Promise<Setup> {
  const app = await build(t, { env: OPEN, settleFeed: false })
  const owner = await register(app)
  const familyId = familyOf(owner)
  const child = (await call(app, owner, 'POST', '/api/children', { name: 'Ilse', dateOfBirth: '2023-01-01', sex: 'female' })).json()
  return { app, owner, familyId, childId: child.id }
}

/** A write held open: a measurement inserted in a transaction that commits only when told to. */
function heldWrite (app: Setup['app'], childId: number, weightKg: number) {
  let commit!: () => void
  let inserted!: () => void
  const ready = new Promise<void>(resolve => { inserted = resolve })
  const done = app.db.sql.begin(async tx => {
    await tx`select begin_change(null, null)`
    await tx`insert into measurements (child_id, measured_at, weight_kg) values (${childId}, ${DAY}, ${weightKg})`
    inserted()
    await new Promise<void>(resolve => { commit = resolve })
  })
  return { ready, commit: async () => { commit(); await done } }
}

async function create (app: App, owner: Pair, childId: number, weightKg: number) {
  const res = await call(app, owner, 'POST', `/api/children/${childId}/measurements`, { measuredAt: DAY, weightKg })
  if (res.statusCode !== 201) throw new Error(`create answered ${res.statusCode}: ${res.body}`)
  return res.json()
}

/** Reads the feed from `cursor` to its end; answers the changes and the cursor to go on from. */
async function readFeed (app: App, owner: Pair, familyId: number, cursor: string | null) {
  const changes: any[] = []
  for (;;) {
    const res = await call(app, owner, 'GET', `/api/families/${familyId}/changes?limit=7${cursor === null ? '' : `&since=${cursor}`}`)
    if (res.statusCode !== 200) throw new Error(`feed answered ${res.statusCode}: ${res.body}`)
    const page = res.json()
    changes.push(...page.data)
    cursor = page.meta.nextCursor
    if (!page.meta.hasMore) return { changes, cursor }
  }
}

/** The feed read once every transaction begun before has ended. */
async function settledFeed (app: Setup['app'], owner: Pair, familyId: number, cursor: string | null) {
  await transactionsSettled(app.db.sql)
  return await readFeed(app, owner, familyId, cursor)
}

const weights = (changes: any[]): number[] => changes.filter(change => change.kind === 'measurement').map(change => change.record.weightKg)

t.test('a writer never waits for another writer of the family', async t => {
  const { app, owner, childId } = await setup(t)
  const held = await heldWrite(app, childId, 10.5)
  await held.ready
  // Before, every write took the family's clock and waited here until the held one ended.
  const answered = await Promise.race([
    create(app, owner, childId, 10.6).then(() => 'answered'),
    new Promise(resolve => setTimeout(() => resolve('waiting'), 5000))
  ])
  t.equal(answered, 'answered', 'a create in the same family answers while another write is open')
  await held.commit()
})

t.test('a change that commits late is not skipped: the feed waits for it and serves it in its place', async t => {
  const { app, owner, familyId, childId } = await setup(t)
  const start = await settledFeed(app, owner, familyId, null)
  const list = `/api/children/${childId}/measurements`
  const etag0 = (await call(app, owner, 'GET', list)).headers.etag as string

  const held = await heldWrite(app, childId, 11.1)
  await held.ready
  await create(app, owner, childId, 11.2)
  const etag1 = (await call(app, owner, 'GET', list)).headers.etag as string
  t.not(etag1, etag0, 'the list\'s ETag moves with the committed write')
  const during = await readFeed(app, owner, familyId, start.cursor)
  t.same(weights(during.changes), [], 'the later write waits while an older transaction is open')
  t.equal(during.cursor, start.cursor, 'and the cursor does not move past it')

  await held.commit()
  const etag2 = (await call(app, owner, 'GET', list)).headers.etag as string
  t.not(etag2, etag1, 'the ETag moves again when the late write commits')
  const after = await settledFeed(app, owner, familyId, during.cursor)
  t.same(weights(after.changes), [11.1, 11.2], 'both come, the late one in its place, each once')
  const whole = await settledFeed(app, owner, familyId, null)
  t.same(weights(whole.changes), [11.1, 11.2])
  t.same(whole.changes.slice(-2).map((change: any) => change.cursor), after.changes.map((change: any) => change.cursor), 'the same cursors from the start')
  t.equal((await call(app, owner, 'GET', list, undefined, { 'if-none-match': etag2 })).statusCode, 304, 'the ETag holds while nothing changes')
})

t.test('concurrent writers committing out of order while a reader pages: every change once, in one order', async t => {
  const { app, owner, familyId, childId } = await setup(t)
  const { cursor: start } = await settledFeed(app, owner, familyId, null)
  const seen: any[] = []
  let cursor: string | null = start
  let writing = true
  const reader = (async () => {
    while (writing) {
      const page = await readFeed(app, owner, familyId, cursor)
      seen.push(...page.changes)
      cursor = page.cursor
      await new Promise(resolve => setImmediate(resolve))
    }
  })()
  const expected: number[] = []
  for (let round = 0; round < 4; round += 1) {
    // Held writes begin first and commit after the writes that began later.
    const held = [await heldWrite(app, childId, 20 + round), await heldWrite(app, childId, 30 + round)]
    await Promise.all(held.map(write => write.ready))
    const quick = Array.from({ length: 8 }, (_, i) => 40 + round * 10 + i)
    await Promise.all(quick.map(weight => create(app, owner, childId, weight)))
    await held[1].commit()
    await held[0].commit()
    expected.push(20 + round, 30 + round, ...quick)
  }
  writing = false
  await reader
  const rest = await settledFeed(app, owner, familyId, cursor)
  seen.push(...rest.changes)
  const got = weights(seen)
  t.equal(got.length, expected.length, 'as many changes as writes')
  t.same([...got].sort(), [...expected].sort(), 'every write once, none skipped, none twice')
  const whole = await settledFeed(app, owner, familyId, start)
  t.same(seen.map(change => change.cursor), whole.changes.map((change: any) => change.cursor), 'in the order a reader from the start sees')
  t.equal(new Set(seen.map(change => change.cursor)).size, seen.length, 'no cursor twice')
})

t.test('a stream resumed with Last-Event-ID loses nothing while writers commit out of order', async t => {
  const { app, owner, familyId, childId } = await setup(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const events: any[] = []
  async function listen (lastEventId: string | null, until: () => boolean) {
    const abort = new AbortController()
    const res = await fetch(`${origin}/api/families/${familyId}/events`, {
      headers: { ...bearer(owner.accessToken), ...(lastEventId === null ? {} : { 'last-event-id': lastEventId }) },
      signal: abort.signal
    })
    const done = readBlocks(res.body as ReadableStream<Uint8Array>, block => {
      const data = block.split('\n').find(line => line.startsWith('data: '))
      if (data !== undefined) events.push(JSON.parse(data.slice(6)))
      if (until()) abort.abort()
    }).catch(() => {})
    return { done, close: () => abort.abort() }
  }
  const expected: number[] = []
  const first = await listen(null, () => weights(events).length >= 5)
  await new Promise(resolve => setTimeout(resolve, 200))
  const writes = async (base: number) => {
    const held = await heldWrite(app, childId, base)
    await held.ready
    const quick = [base + 1, base + 2, base + 3, base + 4]
    await Promise.all(quick.map(weight => create(app, owner, childId, weight)))
    await held.commit()
    expected.push(base, ...quick)
  }
  await writes(50)
  await first.done
  const lastId = events[events.length - 1]?.cursor as string
  // Written while no stream is open.
  await writes(60)
  const second = await listen(lastId, () => weights(events).length >= 15)
  await writes(70)
  await Promise.race([second.done, new Promise(resolve => setTimeout(resolve, 10_000))])
  second.close()
  const got = weights(events)
  t.same([...got].sort(), [...expected].sort(), 'every change once, across the reconnection')
  const whole = await settledFeed(app, owner, familyId, null)
  // The family's own changes of the setup may come first, held back by another file's transaction.
  t.same(events.filter(event => event.kind === 'measurement').map(event => event.cursor), whole.changes.filter((change: any) => change.kind === 'measurement').map((change: any) => change.cursor), 'in the feed\'s order')
})

t.test('writes of the family itself still move its version by one each', async t => {
  const { app, owner, familyId } = await setup(t)
  const before = (await call(app, owner, 'GET', `/api/families/${familyId}`)).json().version
  await Promise.all(Array.from({ length: 6 }, (_, i) => call(app, owner, 'POST', '/api/children', { name: `Kid ${i}`, dateOfBirth: '2022-01-01', sex: 'male' })))
  const after = (await call(app, owner, 'GET', `/api/families/${familyId}`)).json().version
  t.equal(after, before + 6)
  const { changes } = await settledFeed(app, owner, familyId, null)
  const versions = changes.filter((change: any) => change.kind === 'family').map((change: any) => change.version)
  t.same(versions, [...new Set(versions)].sort((a: number, b: number) => a - b), 'each family change a version of its own, in order')
})

t.test('the changes of one item keep their order when an older transaction writes it after a newer one', async t => {
  const { app, owner, familyId, childId } = await setup(t)
  const measurement = await create(app, owner, childId, 12.0)
  let update!: () => void
  let updated!: () => void
  let begun!: () => void
  const ready = new Promise<void>(resolve => { begun = resolve })
  const wrote = new Promise<void>(resolve => { updated = resolve })
  // An older transaction: it takes its id first, with a write of another record.
  const older = app.db.sql.begin(async tx => {
    await tx`select begin_change(null, null)`
    await tx`insert into measurements (child_id, measured_at, weight_kg) values (${childId}, ${DAY}, 12.5)`
    begun()
    await new Promise<void>(resolve => { update = resolve })
    await tx`update measurements set weight_kg = 12.2 where id = ${measurement.id}`
    updated()
  })
  await ready
  // A newer transaction changes the item and commits first.
  const patched = await call(app, owner, 'PATCH', `/api/measurements/${measurement.id}`, { weightKg: 12.1 })
  t.equal(patched.statusCode, 200)
  update()
  await wrote
  await older
  const current = (await call(app, owner, 'GET', `/api/measurements/${measurement.id}`)).json()
  t.equal(current.weightKg, 12.2, 'the older transaction wrote last')
  const { changes } = await settledFeed(app, owner, familyId, null)
  const ofItem = changes.filter((change: any) => change.kind === 'measurement' && change.id === measurement.id)
  t.same(ofItem.map((change: any) => change.record?.weightKg), [12.0, 12.1, 12.2], 'the feed gives the item\'s changes in the order they were written')
  t.same(ofItem.map((change: any) => change.version), [1, 2, 3])
})

t.test('a statement of many rows records a change for each, in their order, and counts them', async t => {
  const { app, owner, familyId, childId } = await setup(t)
  const { cursor: start } = await settledFeed(app, owner, familyId, null)
  const lines = Array.from({ length: 120 }, (_, i) => `2024-01-${String(1 + (i % 28)).padStart(2, '0')},,${(10 + i / 100).toFixed(2)},,`)
  const csv = ['measuredAt,heightCm,weightKg,headCircumferenceCm,notes', ...lines].join('\n')
  const imported = await call(app, owner, 'POST', `/api/children/${childId}/measurements/import`, csv, { 'content-type': 'text/csv' })
  t.equal(imported.statusCode, 201, imported.body)
  const created = await settledFeed(app, owner, familyId, start)
  t.same(weights(created.changes), lines.map((_, i) => Number((10 + i / 100).toFixed(2))), 'a change for each line, in the order of the lines')
  t.ok(created.changes.every((change: any) => change.op === 'created' && change.version === 1 && change.userId === owner.user.id), 'each a creation by the importing user')

  // One statement updates every row; another deletes them.
  await app.db.sql.begin(async tx => {
    await tx`select begin_change(null, ${owner.user.id})`
    await tx`update measurements set notes = 'checked' where child_id = ${childId}`
  })
  const updated = await settledFeed(app, owner, familyId, created.cursor)
  t.equal(updated.changes.length, lines.length, 'an update for each row')
  t.ok(updated.changes.every((change: any) => change.op === 'updated' && change.version === 2 && change.record.notes === 'checked'), 'each with its new version and values')
  await app.db.sql.begin(async tx => {
    await tx`select begin_change(null, null)`
    await tx`delete from measurements where child_id = ${childId}`
  })
  const deleted = await settledFeed(app, owner, familyId, updated.cursor)
  t.same(deleted.changes.map((change: any) => [change.op, change.record, change.version]), lines.map(() => ['deleted', null, 2]), 'a deletion for each row')
  t.same(deleted.changes.map((change: any) => change.id), updated.changes.map((change: any) => change.id), 'of the same records, in the same order')

  const [{ counted, tallied }] = await app.db.sql`
    select (select count(*) from changes where child_id = ${childId})::int as counted, child_changes(${childId})::int as tallied
  `
  t.equal(tallied, counted, 'the child\'s tally counts every change')
})
