import t from 'tap'
import { buildApp, type App } from '../app'
import { scanReminders } from '../domain/reminders/scan'
import { build, databaseSwitch, familyOf, register, testConfig, testDatabase } from './helper'
import { mailServer, ntfyServer, until } from './reminder-receivers'
import { addChild, addVaccine, addVisit, setChannels, spelled, utcDays } from './reminder-data'

t.test('two instances on one database, each with its worker, and a restart of one: each reminder arrives once per channel and item', async t => {
  const mail = await mailServer(t)
  const ntfy = await ntfyServer(t)
  // A slow topic keeps jobs in work on both instances at once.
  ntfy.delay = 300
  const env = {
    SMTP_URL: mail.url, MAIL_FROM: 'reminders@example.org', WEBHOOK_ALLOW_PRIVATE: 'true', REGISTRATION: 'open', JOB_WORKER: 'on'
  }
  const first = await build(t, { env })
  const instance = async (): Promise<App> => {
    const app = await buildApp(testConfig(t, first.db.url, env))
    await app.ready()
    return app
  }
  let second = await instance()
  let secondOpen = true
  t.teardown(async () => { if (secondOpen) await second.close() })

  const days = await utcDays(first)
  const user = await register(first)
  await setChannels(second, user, [{ type: 'ntfy', url: `${ntfy.origin}/both` }, { type: 'email', address: user.user.email }])
  const child = await addChild(first, user, familyOf(user), 'Mia Moreau', days.birth)
  await addVaccine(first, user, child, { name: 'MMR', date: days.lastYear, doseNumber: 1, nextDueDate: days.today })
  await addVaccine(second, user, child, { name: 'DTaP', date: days.lastYear, doseNumber: 4, nextDueDate: days.yesterday })
  await addVisit(first, user, child, days.tomorrow)

  // Both scan at once, several times, as their crons and the settings would.
  await Promise.all([scanReminders(first.sql), scanReminders(second.sql), scanReminders(first.sql), scanReminders(second.sql)])
  await until(() => ntfy.posts.length >= 2, 20_000, 'the first reminders')

  // One instance restarts while reminders are going out: it finishes what it holds, and its successor scans again.
  await second.close()
  secondOpen = false
  second = await instance()
  secondOpen = true
  await Promise.all([scanReminders(first.sql), scanReminders(second.sql), second.reminders.scanSoon(), first.reminders.scanSoon()])

  const reminders = (): string[] => ntfy.posts.filter(post => post.path === '/both' && !/test message/.test(post.title)).map(post => post.text).sort()
  const mails = (): string[] => mail.mails.filter(m => !/test message/.test(m.subject)).map(m => m.text).sort()
  const expected = [
    `Mia: DTaP vaccine dose 5 on ${spelled(days.yesterday)}`, `Mia: MMR vaccine dose 2 on ${spelled(days.today)}`, `Mia: wellness visit on ${spelled(days.tomorrow)}`
  ].sort()
  await until(() => reminders().length >= 3 && mails().length >= 3, 30_000, 'every reminder')
  await new Promise(resolve => setTimeout(resolve, 4000))
  t.same(reminders(), expected, 'the ntfy topic got each reminder once')
  t.same(mails(), expected, 'the mailbox got each reminder once')
  const rows = await first.sql`select status, attempts from reminder_deliveries order by id`
  t.equal(rows.length, 6, 'one reminder per channel and item')
  t.ok(rows.every(row => row.status === 'sent' && row.attempts === 1), 'each sent on its first attempt')
})

t.test('instances starting at once on a database without the queue\'s schema: it is installed once and every one starts', async t => {
  const db = await testDatabase(t)
  await db.sql`drop schema graphile_worker cascade`
  const began = Date.now()
  const started = await Promise.allSettled([1, 2, 3].map(async () => {
    const app = await buildApp(testConfig(t, db.url, { JOB_WORKER: 'on' }))
    t.teardown(() => app.close())
    await app.ready()
    return Date.now() - began
  }))
  t.same(started.map(result => result.status), ['fulfilled', 'fulfilled', 'fulfilled'], `all started: ${JSON.stringify(started.map(result => result.status === 'fulfilled' ? result.value : String(result.reason)))}`)
  const [{ installed }] = await db.sql`select count(*)::int as installed from graphile_worker.migrations`
  t.ok(installed >= 18, `graphile-worker's ${installed} migrations applied`)
})

t.test('the next minute\'s scan stays queued, and the worker outlives the database being away across a minute\'s tick', async t => {
  const ntfy = await ntfyServer(t)
  const server = await build(t, { env: { WEBHOOK_ALLOW_PRIVATE: 'true', REGISTRATION: 'open', JOB_WORKER: 'on' } })
  const nextScan = async (): Promise<{ runAt: Date, next: Date } | undefined> => (await server.sql<Array<{ runAt: Date, next: Date }>>`
    select run_at as "runAt", date_trunc('minute', now()) + interval '1 minute' as next
    from graphile_worker.jobs where key = 'reminders_scan' and locked_at is null
  `)[0]
  const nextMinuteQueued = async (): Promise<boolean> => {
    const queued = await nextScan()
    return queued !== undefined && queued.runAt.getTime() === queued.next.getTime()
  }
  // The worker starts with the first channel; then right at a minute's turn
  // the queued scan runs, and the next one is queued within SCAN_TICK_MS.
  const days = await utcDays(server)
  const user = await register(server)
  await setChannels(server, user, [{ type: 'ntfy', url: `${ntfy.origin}/outage` }])
  await until(nextMinuteQueued, 30_000, 'the next minute\'s scan queued')
  t.pass('the scan of the next minute is queued')

  const database = databaseSwitch(t, server.db.name)
  await new Promise(resolve => setTimeout(resolve, Math.max(0, 60_000 - (Date.now() % 60_000) - 3000)))
  await database.away()
  await new Promise(resolve => setTimeout(resolve, 8000))
  await database.back()

  const child = await addChild(server, user, familyOf(user), 'Leo Novak', days.birth)
  await addVaccine(server, user, child, { name: 'MMR', date: days.lastYear, doseNumber: 1, nextDueDate: days.yesterday })
  await server.reminders.scanSoon()
  await until(() => ntfy.posts.some(post => post.text === `Leo: MMR vaccine dose 2 on ${spelled(days.yesterday)}`), 30_000, 'a reminder after the outage')
  await until(nextMinuteQueued, 30_000, 'the next minute\'s scan queued again')
  t.pass('the worker sends again, and scans are queued again')
})
