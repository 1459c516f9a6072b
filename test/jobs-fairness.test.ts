import t from 'tap'
import { build, call, familyOf, register, type App, type Pair } from './helper'
import { ntfyServer, until, type NtfyServer } from './reminder-receivers'
import { addChild, addVaccine, setChannels, utcDays } from './reminder-data'
import { webhookReceiver, type Receiver } from './webhook-receiver'

// No owner, family, user or receiver holds the job queue's workers: an
// owner's slow webhooks take one worker at a time, reminders never wait
// behind webhooks, and one user's slow channel holds one of the reminders'
// workers at most. Each test checks what arrived while the slow work was
// still going on, not how long anything took.

const ENV = { REGISTRATION: 'open', JOB_WORKER: 'on', WEBHOOK_ALLOW_PRIVATE: 'true' }
const DAY = '2024-03-01'

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

async function webhook (app: App, owner: Pair, familyId: number, receiver: Receiver, path: string): Promise<void> {
  const res = await call(app, owner, 'POST', `/api/families/${familyId}/webhooks`, { url: `${receiver.origin}${path}` })
  if (res.statusCode !== 201) throw new Error(`webhook answered ${res.statusCode}: ${res.body}`)
  receiver.secrets.set(path, res.json().secret)
}

async function measurements (app: App, owner: Pair, childId: number, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const res = await call(app, owner, 'POST', `/api/children/${childId}/measurements`, { measuredAt: DAY, weightKg: 10 + i / 100 })
    if (res.statusCode !== 201) throw new Error(`write answered ${res.statusCode}: ${res.body}`)
  }
}

/** An owner with two families and three webhooks on a receiver that answers late, each with `changes` changes to deliver. */
async function slowOwner (app: App, receiver: Receiver, changes: number): Promise<string[]> {
  const owner = await register(app)
  const second = await call(app, owner, 'POST', '/api/families', { name: 'Second home' })
  const families = [familyOf(owner), second.json().id as number]
  const paths = ['/first-a', '/first-b', '/second']
  await webhook(app, owner, families[0], receiver, paths[0])
  await webhook(app, owner, families[0], receiver, paths[1])
  await webhook(app, owner, families[1], receiver, paths[2])
  for (const familyId of families) {
    const child = await addChild(app, owner, familyId, 'Ada Slow', '2023-01-01')
    await measurements(app, owner, child, changes)
  }
  return paths
}

t.test('an owner\'s slow webhooks hold no reminder: the scan and the send of a due reminder go out while their deliveries run', async t => {
  const slow = await webhookReceiver(t)
  slow.delay = 1500
  const ntfy = await ntfyServer(t)
  const app = await build(t, { env: ENV })
  const changes = 8
  const paths = await slowOwner(app, slow, changes)
  await until(() => slow.arrived >= 1, 20_000, 'the slow deliveries in work')

  await dueReminder(app, ntfy, '/noa')
  await app.reminders.scanSoon()
  await until(() => reminders(ntfy, '/noa').length === 1, 60_000, 'the reminder')
  const complete = paths.filter(path => new Set(slow.acknowledged(path)).size >= changes)
  t.same(complete, [], `the reminder left while every slow webhook still had changes to deliver (${slow.received.length} of ${3 * changes} delivered)`)
})

t.test('one user\'s slow channel holds one of the reminders\' workers at most: the scan and another user\'s reminder go out meanwhile', async t => {
  const slow = await ntfyServer(t)
  const fast = await ntfyServer(t)
  const app = await build(t, { env: ENV })
  const days = await utcDays(app)
  const sam = await register(app)
  const child = await addChild(app, sam, familyOf(sam), 'Sam Slow', days.birth)
  const vaccines = ['MMR', 'DTaP', 'Polio', 'Hib', 'Varicella', 'Hepatitis A', 'Hepatitis B', 'Rotavirus']
  for (const name of vaccines) await addVaccine(app, sam, child, { name, date: days.lastYear, doseNumber: 1, nextDueDate: days.today })
  await setChannels(app, sam, [{ type: 'ntfy', url: `${slow.origin}/sam` }])
  slow.delay = 1500
  await app.reminders.scanSoon()
  await until(() => slow.hits.some(hit => hit.path === '/sam') && slow.hits.length >= 2, 30_000, 'Sam\'s reminders in work')

  await dueReminder(app, fast, '/noa')
  await app.reminders.scanSoon()
  await until(() => reminders(fast, '/noa').length === 1, 60_000, 'the other user\'s reminder')
  const sent = reminders(slow, '/sam').length
  t.ok(sent < vaccines.length / 2, `the other user's reminder left after ${sent} of Sam's ${vaccines.length}`)
  await until(() => reminders(slow, '/sam').length === vaccines.length, 60_000, 'every one of Sam\'s reminders')
  t.equal(slow.peakInFlight, 1, 'Sam\'s reminders were sent one at a time')
})
