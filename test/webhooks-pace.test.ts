import t from 'tap'
import { buildApp } from '../app'
import { build, call, changesSince, familyOf, join, register, testConfig } from './helper'
import { measurements, twoFamilies, webhook } from './job-helpers'
import { until } from './reminder-receivers'
import { addChild } from './reminder-data'
import { webhookReceiver } from './webhook-receiver'

// When a webhook's deliveries run: a job's time budget, after which the
// webhook goes on in a later job behind the others waiting; none for a
// webhook whose maker is gone; a retry's time kept across a lost queue.

const ENV = { REGISTRATION: 'open', JOB_WORKER: 'on', WEBHOOK_ALLOW_PRIVATE: 'true' }

t.test('a job\'s time budget spent, the webhook goes on in a later job behind its maker\'s other webhook, nothing lost and nothing out of order', async t => {
  const receiver = await webhookReceiver(t)
  receiver.delay = 200
  const app = await build(t, { env: { ...ENV, WEBHOOK_JOB_BUDGET_MS: '300' } })
  const owner = await register(app)
  const [first, second] = await twoFamilies(app, owner)
  const a = await webhook(app, owner, first, receiver, '/a')
  await webhook(app, owner, second, receiver, '/b')
  await measurements(app, owner, await addChild(app, owner, first, 'Ada Long', '2023-01-01'), 16)
  await addChild(app, owner, second, 'Bo Short', '2023-01-01')

  const feed = (await changesSince(app, owner, first, a.cursor)).data.map(change => change.cursor)
  t.ok(feed.length >= 17, `the child and its 16 measurements: ${feed.length} changes`)
  await until(() => receiver.acknowledged('/a').length >= feed.length && receiver.acknowledged('/b').length >= 1, 60_000, 'every change')
  t.same(receiver.acknowledged('/a'), feed, 'every change of the long run once, in the feed\'s order, across its jobs')
  const paths = receiver.received.map(item => item.path)
  t.ok(paths.indexOf('/b') < paths.lastIndexOf('/a'), `the other webhook's change came before the long run was through: ${paths.join(' ')}`)
  t.equal(receiver.peakInFlight, 1, 'one maker\'s webhooks, one request at a time')
})

t.test('a webhook whose maker\'s account was deleted gets no job and sends nothing', async t => {
  const receiver = await webhookReceiver(t)
  const app = await build(t, { env: ENV })
  const maker = await register(app)
  const owner = await register(app)
  const familyId = familyOf(maker)
  await join(app, maker, familyId, owner, 'owner')
  const hook = await webhook(app, maker, familyId, receiver, '/orphan')
  const waiting = async (): Promise<number> => (await app.sql`select count(*)::int as jobs from graphile_worker.jobs where flags ? ${`webhook:${hook.id as number}`}`)[0].jobs
  await until(async () => await waiting() === 0, 20_000, 'its first run done')
  await app.sql.begin(async tx => {
    await tx`select begin_change(null, null)`
    await tx`delete from users where id = ${maker.user.id}`
  })
  await addChild(app, owner, familyId, 'Ivy Later', '2023-01-01')
  t.equal(await waiting(), 0, 'no job waits for it')
  await new Promise(resolve => setTimeout(resolve, 1500))
  t.equal(receiver.arrived, 0, 'nothing sent')
})

t.test('a webhook waiting for its retry when the queue\'s jobs were lost goes on at the retry\'s time once the service starts', async t => {
  const receiver = await webhookReceiver(t)
  receiver.mode = 'fail'
  const env = { ...ENV, WEBHOOK_RETRY_MS: '3000' }
  const app = await build(t, { env })
  const owner = await register(app)
  const hook = await webhook(app, owner, familyOf(owner), receiver, '/retry')
  await addChild(app, owner, familyOf(owner), 'Rae Later', '2023-01-01')
  await until(() => receiver.received.length >= 1, 20_000, 'the first attempt, failed')
  await app.close()
  await app.db.sql`drop schema graphile_worker cascade`
  receiver.mode = 'ok'
  const started = await buildApp(testConfig(t, app.db.url, env))
  t.teardown(() => started.close())
  await started.ready()
  const feed = (await changesSince(started, owner, familyOf(owner), hook.cursor)).data.map(change => change.cursor)
  await until(() => receiver.acknowledged('/retry').length >= feed.length, 20_000, 'the changes, once the retry\'s time came')
  t.same(receiver.acknowledged('/retry'), feed, 'every change, in order')
})

t.test('a receiver that answers 2xx but late is backed off like a failing one, its changes delivered and the webhook never disabled; a fast answer ends it', async t => {
  const receiver = await webhookReceiver(t)
  receiver.delay = 800
  const app = await build(t, {
    env: { ...ENV, WEBHOOK_SLOW_MS: '400', WEBHOOK_RETRY_MS: '1000', WEBHOOK_RETRY_GROWTH: '2', WEBHOOK_RETRY_MAX_MS: '4000', WEBHOOK_GIVE_UP_MS: '1000' }
  })
  const owner = await register(app)
  const familyId = familyOf(owner)
  const hook = await webhook(app, owner, familyId, receiver, '/late')
  const url = `/api/families/${familyId}/webhooks/${hook.id as number}`
  await measurements(app, owner, await addChild(app, owner, familyId, 'Lou Late', '2023-01-01'), 4)
  const feed = (await changesSince(app, owner, familyId, hook.cursor)).data.map(change => change.cursor)
  const state = async (): Promise<any> => (await call(app, owner, 'GET', url)).json()

  await until(async () => (await state()).slowAnswers === 1, 20_000, 'the first slow answer')
  const slowed = await state()
  t.match(slowed, { enabled: true, failures: 0, failingSince: null, lastError: null, slowAnswers: 1, cursor: feed[0] }, 'slowed, not failing: the change delivered')
  t.equal(Date.parse(slowed.nextAttemptAt) - Date.parse(slowed.lastDeliveryAt), 1000, 'the next attempt a retry\'s wait after the answer')
  await until(async () => (await state()).slowAnswers === 3, 30_000, 'three slow answers in a row')
  const log = (await call(app, owner, 'GET', `${url}/deliveries`)).json().data.reverse()
  t.ok(log.every((item: any) => item.statusCode === 204 && item.error === null && item.durationMs >= 400), 'each a delivery, slower than WEBHOOK_SLOW_MS')
  const waits = log.slice(1).map((item: any, i: number) => Date.parse(item.at) - Date.parse(log[i].at) - log[i].durationMs)
  t.ok(waits[0] >= 950 && waits[1] >= 1950, `each wait after a slow answer is a retry's, longer each time: ${waits.join(', ')} ms`)
  t.match(await state(), { enabled: true, failures: 0 }, 'slow for longer than WEBHOOK_GIVE_UP_MS, and not disabled')

  receiver.delay = 0
  await until(() => receiver.acknowledged('/late').length >= feed.length, 30_000, 'the rest, once answers are fast')
  t.same(receiver.acknowledged('/late'), feed, 'every change once, in the feed\'s order')
  await until(async () => (await state()).cursor === feed[feed.length - 1], 20_000, 'the last delivery recorded')
  t.match(await state(), { enabled: true, failures: 0, slowAnswers: 0, nextAttemptAt: null, cursor: feed[feed.length - 1] }, 'a fast answer ends the slowing')
})
