import t from 'tap'
import { build, changesSince, familyOf, register, type App, type Pair } from './helper'
import { measurements, twoFamilies, webhook } from './job-helpers'
import { ntfyServer, until, type NtfyServer } from './reminder-receivers'
import { addChild, addVaccine, setChannels, utcDays } from './reminder-data'
import { webhookReceiver, type Receiver } from './webhook-receiver'

// No owner, family, user or receiver holds the job queue's workers: an
// owner's slow webhooks take one worker at a time, reminders never wait
// behind webhooks, and one user's slow channel holds one of the reminders'
// workers at most. Each test checks what arrived while the slow work was
// still going on, not how long anything took.

const ENV = { REGISTRATION: 'open', JOB_WORKER: 'on', WEBHOOK_ALLOW_PRIVATE: 'true' }

/** The reminders a topic received, without its test message. */
function reminders (ntfy: NtfyServer, topic: string): string[] {
  return ntfy.posts.filter(post => post.path === topic && !/test message/.test(post.title)).map(post => post.text)
}

/** A user with a vaccine dose due today and an ntfy topic: a reminder for the next scan to find. */
async function dueReminder (app: App, ntfy: NtfyServer, topic: string): Promise<Pair> {
  const days = await utcDays(app)
  const user = await register(app)
  const child = await addChild(app, user, familyOf(user), 'Noa Quick', days.birth)
  await addVaccine(app, user, child, { name: 'MMR', date: days.lastYear, doseNumber: 1, nextDueDate: days.today })
  await setChannels(app, user, [{ type: 'ntfy', url: `${ntfy.origin}${topic}` }])
  return user
}

/**
 * An owner with two families and three webhooks on a receiver that answers
 * late; each family gets a child and `count` measurements. Answers each
 * webhook's path with the cursors of the changes it is to deliver.
 */
async function slowOwner (app: App, receiver: Receiver, count: number): Promise<Map<string, string[]>> {
  const owner = await register(app)
  const families = await twoFamilies(app, owner)
  const hooks = [
    { path: '/first-a', familyId: families[0] }, { path: '/first-b', familyId: families[0] }, { path: '/second', familyId: families[1] }
  ]
  const made = await Promise.all(hooks.map(async hook => await webhook(app, owner, hook.familyId, receiver, hook.path)))
  for (const familyId of families) {
    const child = await addChild(app, owner, familyId, 'Ada Slow', '2023-01-01')
    await measurements(app, owner, child, count)
  }
  const feeds = await Promise.all(hooks.map(async (hook, i) => (await changesSince(app, owner, hook.familyId, made[i].cursor)).data.map(change => change.cursor)))
  return new Map(hooks.map((hook, i) => [hook.path, feeds[i]]))
}

t.test('an owner\'s slow webhooks, across their families, take one worker at a time: another family\'s webhook and a due reminder go out while their deliveries run', async t => {
  const slow = await webhookReceiver(t)
  slow.delay = 1000
  const fast = await webhookReceiver(t)
  const ntfy = await ntfyServer(t)
  // Slow answers are not backed off here: the workers alone are under test.
  const app = await build(t, { env: { ...ENV, WEBHOOK_SLOW_MS: '120000' } })
  const feeds = await slowOwner(app, slow, 6)
  const paths = [...feeds.keys()]
  const total = [...feeds.values()].flat().length
  await until(() => slow.arrived >= 1, 20_000, 'the slow deliveries in work')
  const undelivered = (): string[] => paths.filter(path => new Set(slow.acknowledged(path)).size < (feeds.get(path) ?? []).length)

  const other = await register(app)
  const hook = await webhook(app, other, familyOf(other), fast, '/other')
  await measurements(app, other, await addChild(app, other, familyOf(other), 'Otto Other', '2023-01-01'), 1)
  const otherChanges = (await changesSince(app, other, familyOf(other), hook.cursor)).data.length
  await until(() => fast.acknowledged('/other').length >= otherChanges, 60_000, 'the other family\'s changes')
  t.same(undelivered(), paths, `the other family's changes arrived while every slow webhook still had changes to deliver (${slow.received.length} of ${total} delivered)`)

  await dueReminder(app, ntfy, '/noa')
  await app.reminders.scanSoon()
  await until(() => reminders(ntfy, '/noa').length === 1, 60_000, 'the reminder')
  t.same(undelivered(), paths, `the reminder left while every slow webhook still had changes to deliver (${slow.received.length} of ${total} delivered)`)

  await until(() => undelivered().length === 0, 120_000, 'every slow delivery')
  t.equal(slow.peakInFlight, 1, 'the owner\'s three webhooks were delivered one request at a time')
  for (const path of paths) t.same(slow.acknowledged(path), feeds.get(path), `${path}: each change once, in the feed's order`)
})

/** A user with `count` vaccine doses due today, each a reminder to the user's ntfy topic. */
async function busyUser (app: App, ntfy: NtfyServer, topic: string, count: number): Promise<void> {
  const days = await utcDays(app)
  const user = await register(app)
  const child = await addChild(app, user, familyOf(user), 'Sam Slow', days.birth)
  const vaccines = ['MMR', 'DTaP', 'Polio', 'Hib', 'Varicella', 'Hepatitis A', 'Hepatitis B', 'Rotavirus']
  for (const name of vaccines.slice(0, count)) await addVaccine(app, user, child, { name, date: days.lastYear, doseNumber: 1, nextDueDate: days.today })
  await setChannels(app, user, [{ type: 'ntfy', url: `${ntfy.origin}${topic}` }])
}

t.test('one user\'s slow channel holds one of the reminders\' workers at most: the scan and another user\'s reminder go out meanwhile', async t => {
  const slow = await ntfyServer(t)
  const fast = await ntfyServer(t)
  slow.delay = 1500
  const app = await build(t, { env: ENV })
  await busyUser(app, slow, '/sam', 8)
  await app.reminders.scanSoon()
  await until(() => slow.hits.length >= 2, 30_000, 'Sam\'s reminders in work (the test message, then a reminder)')

  await dueReminder(app, fast, '/noa')
  await app.reminders.scanSoon()
  await until(() => reminders(fast, '/noa').length === 1, 60_000, 'the other user\'s reminder')
  const sent = reminders(slow, '/sam').length
  t.ok(sent < 4, `the other user's reminder left after ${sent} of Sam's 8`)
  await until(() => reminders(slow, '/sam').length === 8, 60_000, 'every one of Sam\'s reminders')
  t.equal(slow.peakInFlight, 1, 'Sam\'s reminders were sent one at a time')
})

t.test('the workers are shared out: five owners\' slow webhooks take four, two users\' slow channels take two, and the scan still runs', async t => {
  const hooks = await webhookReceiver(t)
  hooks.delay = 1500
  const slow = await ntfyServer(t)
  slow.delay = 1500
  const fast = await ntfyServer(t)
  const app = await build(t, { env: { ...ENV, WEBHOOK_SLOW_MS: '120000' } })
  await busyUser(app, slow, '/sam', 8)
  await busyUser(app, slow, '/sue', 8)
  const owners = []
  for (let i = 0; i < 5; i++) {
    const owner = await register(app)
    const hook = await webhook(app, owner, familyOf(owner), hooks, `/owner-${i}`)
    owners.push({ owner, hook, child: await addChild(app, owner, familyOf(owner), 'Ada Slow', '2023-01-01') })
  }
  await app.reminders.scanSoon()
  // Every owner's deliveries and both users' reminders at once: more jobs than workers.
  await Promise.all(owners.map(async ({ owner, child }) => { await measurements(app, owner, child, 4) }))
  let changes = 0
  for (const { owner, hook } of owners) changes += (await changesSince(app, owner, familyOf(owner), hook.cursor)).data.length
  const slowReminders = (): number => reminders(slow, '/sam').length + reminders(slow, '/sue').length
  await until(() => hooks.arrived >= 4 && slow.hits.length >= 4, 30_000, 'the slow deliveries and reminders in work')

  const noa = await dueReminder(app, fast, '/noa')
  await app.reminders.scanSoon()
  await until(async () => (await app.sql`select count(*)::int as n from reminder_deliveries where user_id = ${noa.user.id}`)[0].n === 1, 30_000, 'the scan')
  t.ok(hooks.received.length < changes && slowReminders() < 16, `the scan ran while the slow work was under way: ${hooks.received.length} of ${changes} deliveries, ${slowReminders()} of 16 reminders`)
  await until(() => hooks.received.length >= changes && slowReminders() === 16 && reminders(fast, '/noa').length === 1, 120_000, 'everything')
  t.equal(hooks.peakInFlight, 4, 'four deliveries at once, at most')
  t.equal(slow.peakInFlight, 2, 'two reminders at once, at most')
})
