import t, { type Test } from 'tap'
import { existsSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import sharp from 'sharp'
import type { App } from '../app'
import { bearer, build, familyOf, join, register, type Pair, type TestDatabase } from './helper'
import { file, form } from './multipart'

// Batches over real HTTP: the app listening on 127.0.0.1, driven with fetch.

interface Sent {
  status: number
  headers: Headers
  json: any
}

class Api {
  constructor (readonly origin: string) {}

  async send (pair: Pair, method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<Sent> {
    const res = await fetch(this.origin + url, {
      method,
      headers: { ...bearer(pair.accessToken), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const text = await res.text()
    return { status: res.status, headers: res.headers, json: text === '' ? null : JSON.parse(text) }
  }

  async batch (pair: Pair, familyId: number, body: unknown, headers: Record<string, string> = {}): Promise<Sent> {
    return await this.send(pair, 'POST', `/api/families/${familyId}/batch`, body, headers)
  }
}

interface Family {
  owner: Pair
  familyId: number
  childId: number
}

async function family (api: Api, app: App): Promise<Family> {
  const owner = await register(app)
  const familyId = familyOf(owner)
  const child = await api.send(owner, 'POST', '/api/children', { name: 'Kim', dateOfBirth: '2022-03-01', sex: 'female', familyId })
  return { owner, familyId, childId: child.json.id }
}

async function setup (t: Test) {
  const app = await build(t, { env: { REGISTRATION: 'open' } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const api = new Api(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`)
  return { app, api, sql: app.db.sql, a: await family(api, app), b: await family(api, app) }
}

async function count (sql: TestDatabase['sql'], table: string, childId: number): Promise<number> {
  const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from ${sql(table)} where child_id = ${childId}`
  return n
}

interface Operation {
  method: string
  path: string
  body?: unknown
  ifMatch?: string
  idempotencyKey?: string
}

function creates (childId: number, n: number, from = 0): Operation[] {
  return Array.from({ length: n }, (_, i) => ({
    method: 'POST', path: `/api/children/${childId}/measurements`, body: { measuredAt: '2024-01-01', weightKg: 10, notes: `op ${from + i}` }
  }))
}

/** The changes feed after a cursor, every page. */
async function changesSince (api: Api, pair: Pair, familyId: number, since: string | null): Promise<any[]> {
  const all: any[] = []
  let cursor = since
  for (;;) {
    const page = await api.send(pair, 'GET', `/api/families/${familyId}/changes?limit=1000${cursor === null ? '' : `&since=${cursor}`}`)
    all.push(...page.json.data)
    cursor = page.json.meta.nextCursor
    if (!page.json.meta.hasMore) return all
  }
}

/** Counts the change events of a family's stream until `stop` is called. */
async function streamChanges (api: Api, pair: Pair, familyId: number): Promise<{ seen: () => number, stop: () => void }> {
  const abort = new AbortController()
  const res = await fetch(`${api.origin}/api/families/${familyId}/events`, { headers: bearer(pair.accessToken), signal: abort.signal })
  let text = ''
  const reader = (res.body as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) return
        text += decoder.decode(value, { stream: true })
      }
    } catch {}
  })()
  return { seen: () => text.split('event: change\n').length - 1, stop: () => abort.abort() }
}

async function until (check: () => boolean, ms: number): Promise<boolean> {
  for (const stop = Date.now() + ms; Date.now() < stop;) {
    if (check()) return true
    await new Promise(resolve => setTimeout(resolve, 20))
  }
  return check()
}

t.test('an atomic batch with a stale ifMatch in its 300th operation writes nothing and says which failed', async t => {
  const { api, sql, a } = await setup(t)
  const m = await api.send(a.owner, 'POST', `/api/children/${a.childId}/measurements`, { measuredAt: '2023-06-01', weightKg: 9 })
  const changed = await api.send(a.owner, 'PATCH', `/api/measurements/${m.json.id as number}`, { notes: 'moved on' })
  t.equal(changed.json.version, 2)
  const [{ cursor }] = await sql<{ cursor: string }[]>`select count(*)::text as cursor from changes where family_id = ${a.familyId}`
  const operations = [
    ...creates(a.childId, 299),
    { method: 'PATCH', path: `/api/measurements/${m.json.id as number}`, body: { notes: 'from an old copy' }, ifMatch: '"1"' },
    ...creates(a.childId, 200, 300)
  ]
  const res = await api.batch(a.owner, a.familyId, { atomic: true, operations })
  t.equal(res.status, 200)
  const { results } = res.json
  t.equal(results.length, 500)
  t.equal(res.json.rolledBack, true)
  t.equal(res.json.failedOperation, 299, 'the batch names the operation that failed')
  t.ok(results.slice(0, 299).every((result: any) => result.status === 201), 'those before say what they would have been')
  t.equal(results[299].status, 412)
  t.equal(results[299].body.code, 'PRECONDITION_FAILED')
  t.equal(results[299].body.details.currentVersion, 2)
  t.same(results[299].body.details.current, changed.json, 'the 412 carries the item as its GET answers it')
  t.ok(results.slice(300).every((result: any) => result.status === 424 && result.body.code === 'FAILED_DEPENDENCY' && result.body.details.failedOperation === 299), 'those after were not run')
  t.equal(await count(sql, 'measurements', a.childId), 1, 'nothing was written')
  const [{ after }] = await sql<{ after: string }[]>`select count(*)::text as after from changes where family_id = ${a.familyId}`
  t.equal(after, cursor, 'nothing was recorded')
})

t.test('a batch that is not atomic writes the others, each recorded and streamed', async t => {
  const { api, sql, a } = await setup(t)
  const m = await api.send(a.owner, 'POST', `/api/children/${a.childId}/measurements`, { measuredAt: '2023-06-01', weightKg: 9 })
  await api.send(a.owner, 'PATCH', `/api/measurements/${m.json.id as number}`, { notes: 'moved on' })
  const before = await changesSince(api, a.owner, a.familyId, null)
  const cursor = before.length === 0 ? null : before[before.length - 1].cursor
  const stream = await streamChanges(api, a.owner, a.familyId)
  t.teardown(stream.stop)
  const operations = [
    ...creates(a.childId, 20),
    { method: 'PATCH', path: `/api/measurements/${m.json.id as number}`, body: { notes: 'stale' }, ifMatch: '"1"' },
    { method: 'PUT', path: `/api/measurements/${m.json.id as number}`, body: { measuredAt: '2023-06-02', weightKg: 9.5 }, ifMatch: '"2"' },
    ...creates(a.childId, 10, 22)
  ]
  const res = await api.batch(a.owner, a.familyId, { operations })
  t.equal(res.status, 200)
  t.equal(res.json.rolledBack, false)
  t.equal(res.json.failedOperation, null)
  const { results } = res.json
  t.equal(results[20].status, 412)
  t.equal(results[20].body.details.current.version, 3, 'the current item, after the operations of the batch')
  t.equal(results[21].status, 200)
  t.equal(results[21].etag, '"3"', 'a result carries its ETag')
  t.equal(results[0].status, 201)
  t.match(results[0].location, /^\/api\/measurements\/\d+$/)
  t.equal(await count(sql, 'measurements', a.childId), 31, 'the other operations were written')

  const changes = await changesSince(api, a.owner, a.familyId, cursor)
  t.equal(changes.length, 31, 'one change an operation that wrote')
  t.equal(changes.filter(change => change.op === 'created').length, 30)
  t.ok(await until(() => stream.seen() >= 31, 10_000), `the event stream saw them (${stream.seen()})`)
})

t.test('each operation is decided as its own request: viewers, strangers and other families', async t => {
  const { app, api, sql, a, b } = await setup(t)
  const viewer = await register(app)
  await join(app as never, a.owner, a.familyId, viewer, 'viewer')
  const m = await api.send(a.owner, 'POST', `/api/children/${a.childId}/measurements`, { measuredAt: '2023-06-01', weightKg: 9 })
  const write = { method: 'PATCH', path: `/api/measurements/${m.json.id as number}`, body: { notes: 'by a viewer' } }
  const single = await api.send(viewer, write.method, write.path, write.body)
  t.equal(single.status, 403)

  const byViewer = await api.batch(viewer, a.familyId, { operations: [write, ...creates(a.childId, 1)] })
  t.equal(byViewer.status, 200, 'a viewer may send a batch')
  for (const result of byViewer.json.results) t.same(result, { status: 403, body: single.json }, 'each write is the single request\'s 403')
  t.equal(await count(sql, 'measurements', a.childId), 1)

  const stranger = await register(app)
  const byStranger = await api.batch(stranger, a.familyId, { operations: creates(a.childId, 1) })
  t.equal(byStranger.status, 403, 'a stranger\'s batch is refused whole')
  t.same(byStranger.json, { error: 'Access denied', code: 'FORBIDDEN', details: {} })

  // A child of another family: the single request's answer, and the others still run.
  const otherChild = { method: 'POST', path: `/api/children/${b.childId}/measurements`, body: { measuredAt: '2024-01-01', weightKg: 10 } }
  const alone = await api.send(a.owner, otherChild.method, otherChild.path, otherChild.body)
  const mixed = await api.batch(a.owner, a.familyId, { operations: [otherChild, ...creates(a.childId, 1)] })
  t.same(mixed.json.results[0], { status: alone.status, body: alone.json }, 'the same answer as the single request')
  t.equal(mixed.json.results[0].status, 403)
  t.equal(mixed.json.results[1].status, 201)
  const atomic = await api.batch(a.owner, a.familyId, { atomic: true, operations: [...creates(a.childId, 1), otherChild] })
  t.same(atomic.json.results.map((result: any) => result.status), [201, 403])
  t.equal(await count(sql, 'measurements', a.childId), 2, 'the atomic batch wrote nothing')
  t.equal(await count(sql, 'measurements', b.childId), 0)

  // A member of both families reaches only the batch's family through it.
  await join(app as never, b.owner, b.familyId, a.owner, 'member')
  const bRecord = await api.send(b.owner, 'POST', `/api/children/${b.childId}/measurements`, { measuredAt: '2023-06-01', weightKg: 9 })
  const reach = await api.batch(a.owner, a.familyId, {
    operations: [otherChild, { method: 'PATCH', path: `/api/measurements/${bRecord.json.id as number}`, body: { notes: 'x' } }, { method: 'DELETE', path: `/api/children/${b.childId}` }]
  })
  t.same(reach.json.results.map((result: any) => result.status), [403, 403, 403], 'another family of the caller is out of the batch\'s reach')
  t.equal(await count(sql, 'measurements', b.childId), 1, 'nothing was written in the other family')
  t.equal((await api.send(b.owner, 'GET', `/api/measurements/${bRecord.json.id as number}`)).json.notes, null)
})

t.test('operations a batch cannot run are refused before anything runs', async t => {
  const { api, sql, a, b } = await setup(t)
  const good = creates(a.childId, 1)[0]
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ method: 'POST', path: `/api/children/${a.childId}/attachments`, body: {} }, 'path'],
    [{ method: 'POST', path: `/api/children/${a.childId}/avatar` }, 'path'],
    [{ method: 'POST', path: `/api/children/${a.childId}/measurements/import` }, 'path'],
    [{ method: 'POST', path: '/api/families/import' }, 'path'],
    [{ method: 'POST', path: `/api/families/${a.familyId}/events/tickets`, body: {} }, 'path'],
    [{ method: 'POST', path: `/api/families/${a.familyId}/batch`, body: { operations: [good] } }, 'path'],
    [{ method: 'PATCH', path: '/api/me', body: { name: 'X' } }, 'path'],
    [{ method: 'POST', path: '/api/me/calendar-feeds', body: { familyId: a.familyId } }, 'path'],
    [{ method: 'POST', path: '/api/admin/users', body: {} }, 'path'],
    [{ method: 'POST', path: '/api/auth/logout', body: {} }, 'path'],
    [{ method: 'PATCH', path: `/api/families/${b.familyId}`, body: { name: 'Taken' } }, 'path'],
    [{ method: 'POST', path: `/api/children/${a.childId}/measurements?dryRun=true`, body: {} }, 'path'],
    [{ method: 'DELETE', path: `/api/children/${a.childId}/../${b.childId}` }, 'path'],
    [{ method: 'DELETE', path: `/api/children/%3${a.childId}` }, 'path'],
    [{ method: 'POST', path: '/api/children', body: { name: 'X', dateOfBirth: '2020-01-01', sex: 'male', familyId: b.familyId } }, 'body/familyId']
  ]
  const operations = [good, ...cases.map(([operation]) => operation), good]
  const res = await api.batch(a.owner, a.familyId, { operations })
  t.equal(res.status, 200)
  const { results } = res.json
  t.equal(results[0].status, 201)
  t.equal(results[results.length - 1].status, 201, 'the operations that may run did')
  for (const [i, [operation, where]] of cases.entries()) {
    const result = results[i + 1]
    t.equal(result.status, 400, `${operation.method as string} ${operation.path as string}`)
    t.equal(result.body.code, 'VALIDATION_ERROR')
    t.equal(result.body.details.issues[0].path, `/body/operations/${i + 1}/${where}`)
  }
  t.equal(await count(sql, 'measurements', a.childId), 2)

  const atomic = await api.batch(a.owner, a.familyId, { atomic: true, operations })
  t.equal(atomic.json.failedOperation, 1)
  t.equal(atomic.json.results[0].status, 424, 'in an atomic batch nothing runs')
  t.equal(await count(sql, 'measurements', a.childId), 2)
  t.equal((await api.send(b.owner, 'GET', `/api/families/${b.familyId}`)).json.name !== 'Taken', true)

  const tooMany = await api.batch(a.owner, a.familyId, { operations: creates(a.childId, 501) })
  t.equal(tooMany.status, 400, 'more than 500 operations')
  t.equal(tooMany.json.details.issues[0].path, '/body/operations')
  const getting = await api.batch(a.owner, a.familyId, { operations: [{ method: 'GET', path: `/api/children/${a.childId}` }] })
  t.equal(getting.status, 400, 'only writes')
  t.equal(await count(sql, 'measurements', a.childId), 2)
})

t.test('a rolled-back batch keeps the file of a row that comes back; a committed one removes it', async t => {
  const { app, api, sql, a } = await setup(t)
  const png = await sharp({ create: { width: 4, height: 4, channels: 3, background: '#33a' } }).png().toBuffer()
  const { payload, headers } = form([file(png, 'scan.png', 'image/png')])
  const uploaded = await fetch(`${api.origin}/api/children/${a.childId}/attachments`, { method: 'POST', headers: { ...bearer(a.owner.accessToken), ...headers }, body: payload })
  const attachment = await uploaded.json() as { id: number, url: string }
  const onDisk = path.join(app.config.uploadDir, path.basename(attachment.url))
  t.ok(existsSync(onDisk))

  const remove = { method: 'DELETE', path: `/api/attachments/${attachment.id}` }
  const failing = { method: 'PATCH', path: `/api/children/${a.childId}`, body: { name: '' } }
  const rolledBack = await api.batch(a.owner, a.familyId, { atomic: true, operations: [remove, failing] })
  t.same(rolledBack.json.results.map((result: any) => result.status), [204, 400])
  t.equal(await count(sql, 'attachments', a.childId), 1, 'the row is back')
  t.ok(existsSync(onDisk), 'and so is its file')
  t.equal((await fetch(api.origin + attachment.url)).status, 200, 'still served')

  const committed = await api.batch(a.owner, a.familyId, { atomic: true, operations: [remove] })
  t.same(committed.json.results.map((result: any) => result.status), [204])
  t.equal(await count(sql, 'attachments', a.childId), 0)
  t.ok(await until(() => !existsSync(onDisk), 2000), 'the file goes once the batch has committed')
})

t.test('keys of operations and of batches are honoured', async t => {
  const { api, sql, a } = await setup(t)
  const keyed = { ...creates(a.childId, 1)[0], idempotencyKey: 'queued-1' }
  const first = await api.batch(a.owner, a.familyId, { operations: [keyed] })
  const second = await api.batch(a.owner, a.familyId, { operations: [keyed] })
  t.equal(second.json.results[0].status, 201)
  t.equal(second.json.results[0].body.id, first.json.results[0].body.id, 'an operation\'s key replays its first answer')
  t.equal(await count(sql, 'measurements', a.childId), 1)
  const single = await api.send(a.owner, 'POST', keyed.path, keyed.body, { 'idempotency-key': 'queued-1' })
  t.equal(single.headers.get('idempotent-replayed'), 'true', 'and so does the single request with that key')
  t.equal(single.json.id, first.json.results[0].body.id)

  // A rolled-back atomic batch keeps none of its keys: sent again, it runs.
  const failing = { method: 'PATCH', path: `/api/children/${a.childId}`, body: { name: '' } }
  const rolled = await api.batch(a.owner, a.familyId, { atomic: true, operations: [{ ...keyed, idempotencyKey: 'queued-2' }, failing] })
  t.equal(rolled.json.rolledBack, true)
  const retried = await api.batch(a.owner, a.familyId, { atomic: true, operations: [{ ...keyed, idempotencyKey: 'queued-2' }] })
  t.equal(retried.json.rolledBack, false)
  t.equal(await count(sql, 'measurements', a.childId), 2)

  // The batch request itself with a key.
  const whole = { operations: creates(a.childId, 3) }
  const sent = await api.batch(a.owner, a.familyId, whole, { 'idempotency-key': 'whole-batch' })
  const again = await api.batch(a.owner, a.familyId, whole, { 'idempotency-key': 'whole-batch' })
  t.equal(again.headers.get('idempotent-replayed'), 'true')
  t.same(again.json, sent.json)
  t.equal(await count(sql, 'measurements', a.childId), 5)
})
