import t, { type Test } from 'tap'
import { buildApp, type App } from '../app'
import { build, call, databaseSwitch, familyOf, register, testConfig, type Pair, type TestDatabase } from './helper'
import { until } from './reminder-receivers'
import { webhookReceiver, type Receiver } from './webhook-receiver'

// Webhooks delivered by the job queue to a real receiver on 127.0.0.1, which
// checks every signature with the Standard Webhooks library: every change of
// the family, in the feed's order, while writers run and commit out of
// order, through a receiver that is down, across two instances.

// Retries within seconds instead of minutes.
const FAST = { REGISTRATION: 'open', JOB_WORKER: 'on', WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_MS: '200', WEBHOOK_RETRY_GROWTH: '2', WEBHOOK_RETRY_MAX_MS: '800' }
const DAY = '2024-03-01'

interface Family {
  app: App & { db: TestDatabase }
  owner: Pair
  familyId: number
  childId: number
}

async function family (t: Test, env: Record<string, string> = {}): Promise<Family> {
  const app = await build(t, { env: { ...FAST, ...env } })
  const owner = await register(app)
  const familyId = familyOf(owner)
  const child = (await call(app, owner, 'POST', '/api/children', { name: 'Ilse', dateOfBirth: '2023-01-01', sex: 'female' })).json()
  return { app, owner, familyId, childId: child.id }
}

async function makeWebhook (f: Family, receiver: Receiver, path: string, events?: string[]) {
  const res = await call(f.app, f.owner, 'POST', `/api/families/${f.familyId}/webhooks`, { url: `${receiver.origin}${path}`, ...(events === undefined ? {} : { events }) })
  if (res.statusCode !== 201) throw new Error(`webhook answered ${res.statusCode}: ${res.body}`)
  receiver.secrets.set(path, res.json().secret)
  return res.json()
}

async function write (app: App, f: Family, i: number): Promise<void> {
  const res = i % 3 === 0
    ? await call(app, f.owner, 'POST', `/api/children/${f.childId}/visits`, { date: DAY, type: 'sick', notes: `visit ${i}` })
    : await call(app, f.owner, 'POST', `/api/children/${f.childId}/measurements`, { measuredAt: DAY, weightKg: 10 + i / 100 })
  if (res.statusCode !== 201) throw new Error(`write answered ${res.statusCode}: ${res.body}`)
  if (i % 7 === 0) {
    const kind = i % 3 === 0 ? 'visits' : 'measurements'
    const patched = await call(app, f.owner, 'PATCH', `/api/${kind}/${res.json().id as number}`, { notes: `changed ${i}` })
    if (patched.statusCode !== 200) throw new Error(`patch answered ${patched.statusCode}: ${patched.body}`)
  }
}

/** `count` writes by `parallel` writers at once, spread over the apps given. */
async function writers (apps: App[], f: Family, count: number, parallel: number, pauseMs = 0): Promise<void> {
  let next = 0
  await Promise.all(Array.from({ length: parallel }, async (_, writer) => {
    while (next < count) {
      const i = next++
      await write(apps[writer % apps.length], f, i)
      if (pauseMs > 0) await new Promise(resolve => setTimeout(resolve, pauseMs))
    }
  }))
}

/** A measurement written in a transaction that commits only when told to. */
function heldWrite (f: Family, weightKg: number) {
  let commit!: () => void
  let inserted!: () => void
  const ready = new Promise<void>(resolve => { inserted = resolve })
  const done = f.app.db.sql.begin(async tx => {
    await tx`select begin_change(null, null)`
    await tx`insert into measurements (child_id, measured_at, weight_kg) values (${f.childId}, ${DAY}, ${weightKg})`
    inserted()
    await new Promise<void>(resolve => { commit = resolve })
  })
  return { ready, commit: async () => { commit(); await done } }
}

/** The family's changes after a cursor, read from the feed once every transaction has ended. */
async function feed (f: Family, since: string): Promise<any[]> {
  const res = await call(f.app, f.owner, 'GET', `/api/families/${f.familyId}/changes?limit=1000&since=${since}`)
  if (res.statusCode !== 200) throw new Error(`feed answered ${res.statusCode}: ${res.body}`)
  return res.json().data
}

/** Waits until a path has acknowledged every change of the feed after `since`; answers the feed. */
async function allDelivered (f: Family, receiver: Receiver, path: string, since: string, ms = 60_000): Promise<any[]> {
  let changes: any[] = []
  try {
    await until(async () => {
      changes = await feed(f, since)
      return new Set(receiver.acknowledged(path)).size >= changes.length && changes.length > 0
    }, ms, `every change at ${path}`)
  } catch (error) {
    // What the queue and the webhooks were doing, to tell why.
    const jobs = await f.app.sql`select queue_name, key, flags, run_at, locked_at, attempts, last_error from graphile_worker.jobs order by id`
    const hooks = await f.app.sql`select id, after_seq, failures, failing_since, next_attempt_at, last_error, disabled_at from webhooks`
    const log = await f.app.sql`select attempted_at, status_code, error from webhook_deliveries order by id desc limit 5`
    throw new Error(`${(error as Error).message}: ${receiver.acknowledged(path).length} of ${changes.length}; jobs ${JSON.stringify(jobs)}; webhooks ${JSON.stringify(hooks)}; log ${JSON.stringify(log)}`)
  }
  return changes
}

function checkSigned (t: Test, receiver: Receiver, path: string, changes: any[]): void {
  const byCursor = new Map(changes.map(change => [change.cursor, change]))
  const mine = receiver.received.filter(item => item.path === path)
  t.ok(mine.every(item => item.verified), 'every request\'s signature checks out with the Standard Webhooks library')
  t.ok(mine.every(item => item.contentType === 'application/json'), 'JSON')
  t.ok(mine.every(item => /^v1,[A-Za-z0-9+/]{43}=$/.test(item.signature)), 'v1, then base64 of an HMAC-SHA256')
  t.ok(mine.every(item => Math.abs(Number(item.timestamp) - Date.now() / 1000) < 120), 'the attempt\'s time in seconds')
  const mismatched = mine.filter(item => {
    const body = JSON.parse(item.body)
    const change = byCursor.get(item.id)
    if (change === undefined || body.cursor !== item.id) return true
    return JSON.stringify(body) !== JSON.stringify(change.kind === 'family' ? { ...change, record: { ...change.record, role: null } } : change)
  })
  t.same(mismatched.map(item => item.body), [], 'each body is the feed\'s change, webhook-id its cursor')
}

t.test('every change of the family, in the feed\'s order, signed, while writers run and commit out of order', async t => {
  const receiver = await webhookReceiver(t)
  const f = await family(t)
  const before = (await call(f.app, f.owner, 'POST', `/api/children/${f.childId}/measurements`, { measuredAt: DAY, weightKg: 9.99 })).json()
  const hook = await makeWebhook(f, receiver, '/all')

  const first = heldWrite(f, 11.11)
  await first.ready
  const writing = writers([f.app], f, 40, 4)
  const second = heldWrite(f, 22.22)
  await second.ready
  await writing
  // The later transaction commits first; the older one last, after the rest.
  await second.commit()
  await writers([f.app], f, 6, 2)
  await first.commit()

  const changes = await allDelivered(f, receiver, '/all', hook.cursor)
  t.ok(changes.length >= 48, `${changes.length} changes`)
  t.same(receiver.acknowledged('/all'), changes.map(change => change.cursor), 'each change once, in the feed\'s order')
  const weights = changes.filter(change => change.kind === 'measurement' && change.op === 'created').map(change => change.record.weightKg)
  t.ok(weights.includes(11.11) && weights.includes(22.22), 'the late commits too')
  t.notOk(receiver.received.some(item => JSON.parse(item.body).id === before.id && JSON.parse(item.body).kind === 'measurement'), 'nothing made before the webhook')
  checkSigned(t, receiver, '/all', changes)

  // The receiver has the last change a moment before the service records its 2xx.
  const last = changes[changes.length - 1].cursor
  const shown = async () => (await call(f.app, f.owner, 'GET', `/api/families/${f.familyId}/webhooks/${hook.id as number}`)).json()
  await until(async () => (await shown()).cursor === last, 10_000, 'the last acknowledgement recorded').catch(() => {})
  const listed = await shown()
  t.equal(listed.cursor, last, 'the webhook\'s cursor is the last change delivered')
  t.ok(listed.lastDeliveryAt !== null && listed.failures === 0)
  const log = (await call(f.app, f.owner, 'GET', `/api/families/${f.familyId}/webhooks/${hook.id as number}/deliveries?limit=1000`)).json()
  t.equal(log.meta.total, changes.length, 'one attempt a change')
  t.same(log.data.map((item: any) => item.cursor).reverse(), changes.map(change => change.cursor), 'newest first')
  t.ok(log.data.every((item: any) => item.statusCode === 204 && item.error === null && item.durationMs >= 0))
})

t.test('a receiver down: retried with backoff, nothing lost, nothing again once acknowledged', async t => {
  const receiver = await webhookReceiver(t)
  const f = await family(t)
  const hook = await makeWebhook(f, receiver, '/hook')
  const writing = writers([f.app], f, 36, 2, 150)

  await new Promise(resolve => setTimeout(resolve, 800))
  receiver.mode = 'fail'
  await new Promise(resolve => setTimeout(resolve, 1500))
  const failing = (await call(f.app, f.owner, 'GET', `/api/families/${f.familyId}/webhooks/${hook.id as number}`)).json()
  t.ok(failing.failures > 0 && failing.failingSince !== null && failing.lastError === 'the webhook answered 503', `the owner sees the failure: ${JSON.stringify(failing)}`)
  const downAt = Date.now()
  await receiver.stop()
  await new Promise(resolve => setTimeout(resolve, 3000))
  await receiver.start()
  const upAt = Date.now()
  receiver.mode = 'ok'
  await writing

  const changes = await allDelivered(f, receiver, '/hook', hook.cursor)
  t.same(receiver.acknowledged('/hook'), changes.map(change => change.cursor), 'each change acknowledged once, in order')
  checkSigned(t, receiver, '/hook', changes)
  const log = (await call(f.app, f.owner, 'GET', `/api/families/${f.familyId}/webhooks/${hook.id as number}/deliveries?limit=1000`)).json().data
  const refused = log.filter((item: any) => item.statusCode === null)
  const unavailable = log.filter((item: any) => item.statusCode === 503)
  t.ok(unavailable.length > 0 && unavailable.every((item: any) => item.error === 'the webhook answered 503' && item.response === null), 'the 503s, with their status alone')
  t.notOk(JSON.stringify(log).includes('maintenance'), 'the answer\'s body is never kept')
  // Refused connections, and an attempt in flight cut as the receiver stopped, read alike.
  t.ok(refused.length > 0 && refused.every((item: any) => item.error === 'the webhook could not be reached'), `the failed connections: ${JSON.stringify(refused.map((item: any) => item.error))}`)
  const whileDown = refused.filter((item: any) => Date.parse(item.at) >= downAt && Date.parse(item.at) <= upAt)
  t.ok(whileDown.length >= 2 && whileDown.length <= 12, `${whileDown.length} attempts in the 3 s down: retries wait, and longer each time`)
  const gaps = whileDown.map((item: any) => Date.parse(item.at)).sort().slice(1).map((at: number, i: number, all: number[]) => at - (i === 0 ? Date.parse(whileDown[whileDown.length - 1].at) : all[i - 1]))
  t.ok(gaps.every((gap: number) => gap >= 150 || gap < 0), `no attempt sooner than the first retry's wait: ${gaps.join(', ')}`)
  const after = (await call(f.app, f.owner, 'GET', `/api/families/${f.familyId}/webhooks/${hook.id as number}`)).json()
  t.match(after, { enabled: true, failures: 0, failingSince: null, lastError: null }, 'well again')

  // Nothing more arrives once every change is acknowledged.
  const count = receiver.received.length
  await new Promise(resolve => setTimeout(resolve, 1500))
  t.equal(receiver.received.length, count, 'no delivery again after success')
})

t.test('failing for WEBHOOK_GIVE_UP_MS disables the webhook; enabled again, it delivers what it missed, in order', async t => {
  const receiver = await webhookReceiver(t)
  const f = await family(t, { WEBHOOK_GIVE_UP_MS: '1500' })
  const hook = await makeWebhook(f, receiver, '/ha')
  const url = `/api/families/${f.familyId}/webhooks/${hook.id as number}`
  await receiver.stop()
  await writers([f.app], f, 3, 1)
  await until(async () => (await call(f.app, f.owner, 'GET', url)).json().enabled === false, 20_000, 'the webhook disabled')
  const disabled = (await call(f.app, f.owner, 'GET', `/api/families/${f.familyId}/webhooks`)).json().data[0]
  t.match(disabled, { enabled: false, disabledAt: String, disabledReason: /^Every delivery failed for 1\.5 s, \d+ attempts; the last one: the webhook could not be reached$/ }, 'the listing says why')
  t.ok(Date.parse(disabled.disabledAt) - Date.parse(disabled.failingSince) >= 1500, 'after the give-up time')

  const jobs = async () => (await f.app.sql`select count(*)::int as n from graphile_worker.jobs where flags ? ${`webhook:${hook.id as number}`}`)[0].n
  await until(async () => await jobs() === 0, 20_000, 'the jobs of before done')
  await writers([f.app], f, 4, 2)
  t.equal(await jobs(), 0, 'a disabled webhook gets no job')
  await receiver.start()
  await new Promise(resolve => setTimeout(resolve, 1200))
  t.same(receiver.received, [], 'nothing sent while disabled')

  const enabled = await call(f.app, f.owner, 'POST', `${url}/enable`)
  t.equal(enabled.statusCode, 200)
  t.match(enabled.json(), { enabled: true, disabledAt: null, disabledReason: null, failures: 0, failingSince: null })
  const changes = await allDelivered(f, receiver, '/ha', hook.cursor)
  t.ok(changes.length >= 9, `${changes.length} changes, those made while disabled included`)
  t.same(receiver.acknowledged('/ha'), changes.map(change => change.cursor), 'in order, each once')
})

t.test('redirects are not followed, and an answer slower than WEBHOOK_TIMEOUT is a failure', async t => {
  const receiver = await webhookReceiver(t)
  const f = await family(t, { WEBHOOK_TIMEOUT: '1', WEBHOOK_RETRY_MS: '300' })
  const hook = await makeWebhook(f, receiver, '/moved')
  const log = async () => (await call(f.app, f.owner, 'GET', `/api/families/${f.familyId}/webhooks/${hook.id as number}/deliveries`)).json().data
  receiver.mode = 'redirect'
  await writers([f.app], f, 1, 1)
  await until(async () => (await log()).some((item: any) => item.statusCode === 302), 20_000, 'a redirect answered')
  t.match((await log())[0], { statusCode: 302, error: 'the webhook answered 302: redirects are not followed' })
  receiver.delay = 1500
  receiver.mode = 'ok'
  await until(async () => (await log()).some((item: any) => item.statusCode === null), 20_000, 'a slow answer')
  t.match((await log()).find((item: any) => item.statusCode === null), { error: 'the webhook could not be reached' }, 'a slow answer reads as a refused port does')
  t.ok((await log()).find((item: any) => item.statusCode === null).durationMs < 1500, 'given up after the time limit')
  receiver.delay = 0
  const changes = await allDelivered(f, receiver, '/moved', hook.cursor)
  t.notOk(receiver.received.some(item => item.path === '/elsewhere'), 'the redirect\'s target never reached')
  t.same([...new Set(receiver.acknowledged('/moved'))], changes.map(change => change.cursor), 'delivered once the receiver answers in time')
})

t.test('two instances, each with its worker: each change once, in order', async t => {
  const receiver = await webhookReceiver(t)
  receiver.delay = 20
  const f = await family(t)
  const second = await buildApp(testConfig(t, f.app.db.url, FAST))
  t.teardown(() => second.close())
  await second.ready()
  const hook = await makeWebhook(f, receiver, '/both')
  await writers([f.app, second], f, 40, 4)
  const changes = await allDelivered(f, receiver, '/both', hook.cursor)
  t.same(receiver.received.map(item => item.id), changes.map(change => change.cursor), 'every request once, in the feed\'s order')
  checkSigned(t, receiver, '/both', changes)
})

t.test('events choose the kinds sent; a deleted webhook sends nothing more', async t => {
  const receiver = await webhookReceiver(t)
  const f = await family(t)
  const all = await makeWebhook(f, receiver, '/all')
  const visits = await makeWebhook(f, receiver, '/visits', ['visit'])
  await writers([f.app], f, 12, 2)
  const changes = await allDelivered(f, receiver, '/all', all.cursor)
  const visitChanges = changes.filter(change => change.kind === 'visit')
  t.ok(visitChanges.length >= 4 && visitChanges.length < changes.length)
  await until(() => receiver.acknowledged('/visits').length >= visitChanges.length, 20_000, 'the visits')
  t.same(receiver.acknowledged('/visits'), visitChanges.map(change => change.cursor), 'only visits, in order')
  const last = changes[changes.length - 1].cursor
  await until(async () => (await call(f.app, f.owner, 'GET', `/api/families/${f.familyId}/webhooks/${visits.id as number}`)).json().cursor === last, 20_000, 'the filtered webhook past every change')

  receiver.mode = 'fail'
  await writers([f.app], f, 1, 1)
  await until(() => receiver.received.some(item => item.path === '/all' && item.status === 503), 20_000, 'a failure')
  t.equal((await call(f.app, f.owner, 'DELETE', `/api/families/${f.familyId}/webhooks/${all.id as number}`)).statusCode, 204)
  const [{ jobs }] = await f.app.sql`select count(*)::int as jobs from graphile_worker.jobs where flags ? ${`webhook:${all.id as number}`} and locked_at is null`
  t.equal(jobs, 0, 'its waiting jobs are gone')
  receiver.mode = 'ok'
  const seen = receiver.received.filter(item => item.path === '/all').length
  const visitCount = receiver.acknowledged('/visits').length
  await writers([f.app], f, 3, 1)
  await until(() => receiver.acknowledged('/visits').length > visitCount, 20_000, 'the other webhook still delivering')
  await new Promise(resolve => setTimeout(resolve, 1000))
  t.equal(receiver.received.filter(item => item.path === '/all').length, seen, 'nothing more to the deleted one')
  const [{ log }] = await f.app.sql`select count(*)::int as log from webhook_deliveries where webhook_id = ${all.id as number}`
  t.equal(log, 0, 'its log went with it')
})

t.test('a webhook deleted while a delivery is in work: that delivery ends quietly, and nothing more is sent', async t => {
  const receiver = await webhookReceiver(t)
  receiver.delay = 1500
  const f = await family(t)
  const hook = await makeWebhook(f, receiver, '/slow')
  await writers([f.app], f, 1, 1)
  await until(() => receiver.arrived === 1, 20_000, 'the delivery in work')
  t.equal((await call(f.app, f.owner, 'DELETE', `/api/families/${f.familyId}/webhooks/${hook.id as number}`)).statusCode, 204)
  await until(() => receiver.received.length === 1, 20_000, 'the answer')
  await writers([f.app], f, 2, 1)
  await new Promise(resolve => setTimeout(resolve, 1500))
  t.equal(receiver.arrived, 1, 'nothing more sent')
  const jobs = await f.app.sql`select attempts, last_error as "lastError" from graphile_worker.jobs where flags ? ${`webhook:${hook.id as number}`}`
  t.same(jobs, [], 'no job left over, none failed')
  const [{ log }] = await f.app.sql`select count(*)::int as log from webhook_deliveries`
  t.equal(log, 0, 'no attempt logged for the deleted webhook')
})

t.test('an instance stopping ends a webhook\'s run after the attempt in work, and another goes on from there', async t => {
  const receiver = await webhookReceiver(t)
  receiver.delay = 400
  const f = await family(t, { JOB_WORKER: 'off' })
  const hook = await makeWebhook(f, receiver, '/handover')
  await writers([f.app], f, 12, 3)
  const first = await buildApp(testConfig(t, f.app.db.url, FAST))
  await first.ready()
  await until(() => receiver.arrived >= 2, 20_000, 'deliveries in work')
  const began = Date.now()
  await first.close()
  const took = Date.now() - began
  t.ok(took < 2000, `the stop waited for the attempt in work only (${took} ms), not for the ${12 - receiver.received.length} changes left`)
  const delivered = receiver.received.length
  t.ok(delivered < 12, `${delivered} delivered before the stop`)
  const second = await buildApp(testConfig(t, f.app.db.url, FAST))
  t.teardown(() => second.close())
  await second.ready()
  const changes = await allDelivered(f, receiver, '/handover', hook.cursor)
  t.same(receiver.acknowledged('/handover'), changes.map(change => change.cursor), 'the rest, in order, none twice')
})

t.test('a delivery that ends while the database is away: its job and queue are unlocked once it is back, and the deliveries go on', async t => {
  const receiver = await webhookReceiver(t)
  receiver.delay = 1500
  const f = await family(t)
  const hook = await makeWebhook(f, receiver, '/away')
  const database = databaseSwitch(t, f.app.db.name)
  await writers([f.app], f, 1, 1)
  await until(() => receiver.arrived === 1, 20_000, 'the delivery in work')
  // The database goes away while the receiver answers: the worker can record
  // neither the delivery nor the end of its job, and that worker ends.
  await database.away()
  await until(() => receiver.received.length === 1, 20_000, 'the answer')
  await new Promise(resolve => setTimeout(resolve, 1500))
  await database.back()
  receiver.delay = 0
  await writers([f.app], f, 2, 1)
  const changes = await allDelivered(f, receiver, '/away', hook.cursor, 30_000)
  const cursors = changes.map(change => change.cursor)
  const acknowledged = receiver.acknowledged('/away')
  t.equal(acknowledged[0], cursors[0], 'the first change reached the receiver before the database went away')
  t.same(acknowledged.slice(1), cursors, 'its delivery was not recorded: it is sent again, then every later change, once each, in order')
  await until(async () => {
    const [{ locked }] = await f.app.sql<Array<{ locked: number }>>`
      select (select count(*) from graphile_worker._private_jobs where locked_at is not null)
        + (select count(*) from graphile_worker._private_job_queues where locked_at is not null) as locked
    `
    return locked === 0
  }, 10_000, 'no job or queue locked')
  t.pass('no job or queue left locked')
})

t.test('jobs lost with the queue (a restore before the service started) are made again at start', async t => {
  const receiver = await webhookReceiver(t)
  const f = await family(t, { JOB_WORKER: 'off' })
  const hook = await makeWebhook(f, receiver, '/later')
  await f.app.close()
  // The queue's schema gone: a write of the family with a webhook still goes through, and adds no job.
  await f.app.db.sql`drop schema graphile_worker cascade`
  await f.app.db.sql.begin(async tx => {
    await tx`select begin_change(null, null)`
    await tx`insert into measurements (child_id, measured_at, weight_kg) values (${f.childId}, ${DAY}, 12.34)`
  })
  const started = await buildApp(testConfig(t, f.app.db.url, FAST))
  t.teardown(() => started.close())
  await started.ready()
  await until(() => receiver.acknowledged('/later').length >= 1, 20_000, 'the change written without the queue')
  const body = JSON.parse(receiver.received[0].body)
  t.match(body, { kind: 'measurement', op: 'created', record: { weightKg: 12.34 } })
  t.ok(receiver.received[0].verified)
  t.not(body.cursor, hook.cursor)
})
