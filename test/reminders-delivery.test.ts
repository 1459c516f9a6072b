import t from 'tap'
import { scanReminders } from '../domain/reminders/scan'
import { build, call, familyOf, join, register, type App } from './helper'
import { mailServer, ntfyServer, until, type NtfyServer } from './reminder-receivers'
import { addChild, addVaccine, addVisit, setChannels, spelled, utcDays } from './reminder-data'

const FROM = 'Child health <reminders@example.org>'

async function app (t: Parameters<typeof build>[0], smtpUrl: string, env: Record<string, string> = {}): Promise<App> {
  return build(t, {
    env: { SMTP_URL: smtpUrl, MAIL_FROM: FROM, WEBHOOK_ALLOW_PRIVATE: 'true', REGISTRATION: 'open', JOB_WORKER: 'on', ...env }
  })
}

/** The reminders a topic received, without its test message. */
function reminders (ntfy: NtfyServer, topic: string): string[] {
  return ntfy.posts.filter(post => post.path === topic && !/test message/.test(post.title)).map(post => post.text)
}

const pause = async (ms: number): Promise<void> => { await new Promise(resolve => setTimeout(resolve, ms)) }

t.test('the scan finds a vaccine\'s nextDueDate reached and a visit tomorrow, for owners and members on every channel, once; viewers and other families get nothing', async t => {
  const mail = await mailServer(t)
  const ntfy = await ntfyServer(t)
  const server = await app(t, mail.url)
  const days = await utcDays(server)
  const owner = await register(server, { email: `owner-${Date.now()}@example.org` })
  const familyId = familyOf(owner)
  t.equal((await call(server, owner, 'PATCH', `/api/families/${familyId}`, { name: 'The Lindqvist-Berg family' })).statusCode, 200)
  const member = await register(server)
  const viewer = await register(server)
  await join(server, owner, familyId, member, 'member')
  await join(server, owner, familyId, viewer, 'viewer')
  const outsider = await register(server, { email: `outsider-${Date.now()}@example.org` })
  const otherChild = await addChild(server, outsider, familyOf(outsider), 'Otto Other', days.birth)
  await addVisit(server, outsider, otherChild, days.tomorrow)

  const kim = await addChild(server, owner, familyId, 'Kim Lindqvist', days.birth)
  await addVaccine(server, owner, kim, { name: 'MMR', date: days.lastYear, doseNumber: 1, nextDueDate: days.today })
  await addVaccine(server, owner, kim, { name: 'Hepatitis A', date: days.lastYear, doseNumber: 1, nextDueDate: days.nextMonth })
  // A vaccine whose latest dose has no next due date is not due, whatever an earlier dose said.
  await addVaccine(server, owner, kim, { name: 'Polio', date: days.lastYear, doseNumber: 1, nextDueDate: days.lastWeek })
  await call(server, owner, 'POST', `/api/children/${kim}/medical-events`, { type: 'vaccine', name: 'Polio', date: days.yesterday, doseNumber: 2 })
  await addVisit(server, owner, kim, days.tomorrow, 'dental')
  await addVisit(server, owner, kim, days.yesterday)
  // Appointments further ahead are reminded of only the day before them.
  await addVisit(server, owner, kim, days.dayAfterTomorrow, 'vision')
  await addVisit(server, owner, kim, days.nextMonth, 'injury')

  const ownerTopic = '/owner-topic'
  const memberTopic = '/member-topic'
  await setChannels(server, owner, [{ type: 'email', address: owner.user.email }, { type: 'ntfy', url: ntfy.origin + ownerTopic }])
  await setChannels(server, member, [{ type: 'ntfy', url: ntfy.origin + memberTopic }])
  await setChannels(server, viewer, [{ type: 'email', address: viewer.user.email }])
  await setChannels(server, outsider, [{ type: 'email', address: outsider.user.email }])

  const expected = [`Kim: MMR vaccine dose 2 on ${spelled(days.today)}`, `Kim: dental visit on ${spelled(days.tomorrow)}`].sort()
  await until(() => reminders(ntfy, ownerTopic).length >= 2 && reminders(ntfy, memberTopic).length >= 2 &&
    mail.mails.filter(m => m.to.includes(owner.user.email.toLowerCase()) && !/test message/.test(m.subject)).length >= 2, 30_000, 'the reminders')
  t.same(reminders(ntfy, ownerTopic).sort(), expected, 'the owner\'s ntfy topic')
  t.same(reminders(ntfy, memberTopic).sort(), expected, 'the member\'s ntfy topic')
  t.ok(ntfy.posts.filter(post => post.path === ownerTopic && !/test message/.test(post.title)).every(post => post.title === 'Reminder for Kim'))

  const ownerMails = mail.mails.filter(m => m.to.map(to => to.toLowerCase()).includes(owner.user.email.toLowerCase()) && !/test message/.test(m.subject))
  t.same(ownerMails.map(m => m.text).sort(), expected, 'the owner\'s e-mails')
  for (const m of ownerMails) {
    t.equal(m.subject, 'Reminder for Kim')
    for (const secret of ['Lindqvist', 'Berg', 'secret', 'LOT-SECRET', 'thigh', 'Dr.', owner.user.name]) {
      t.notOk(m.raw.includes(secret), `the e-mail does not tell ${secret}`)
    }
  }

  // Scans again (as the cron does every minute) send nothing twice, and the others never get anything.
  await server.reminders.scanSoon()
  await pause(1500)
  await server.reminders.scanSoon()
  await pause(2500)
  t.equal(reminders(ntfy, ownerTopic).length, 2, 'once')
  t.equal(reminders(ntfy, memberTopic).length, 2, 'once')
  const lower = (email: string): string => email.toLowerCase()
  t.same(mail.mails.filter(m => m.to.map(lower).includes(lower(viewer.user.email))).map(m => m.subject), ['Child health: test message'], 'the viewer got the test message only')
  const outsiders = mail.mails.filter(m => m.to.map(lower).includes(lower(outsider.user.email)))
  t.same(outsiders.map(m => m.text).sort(), [`Otto: wellness visit on ${spelled(days.tomorrow)}`, 'This channel is set up: reminders will arrive here.'], 'another family\'s user: its own child\'s reminder, nothing of Kim')
  t.equal(mail.mails.filter(m => m.to.map(lower).includes(lower(owner.user.email))).length, 3, 'the owner: the test message and two reminders')

  const settings = (await call(server, owner, 'GET', '/api/me/notifications')).json()
  t.ok(settings.channels.every((c: any) => Date.parse(c.lastDeliveryAt) > Date.parse(c.verifiedAt)), 'each channel\'s last delivery is a reminder\'s')

  const [{ count }] = await server.sql`select count(*)::int from reminder_deliveries where status = 'sent'`
  t.equal(count, 7, 'two items on three channels, and the other family\'s visit on its one')
})

t.test('a failing channel is retried with a growing wait, then given up, and GET shows it; a receiver that comes back gets the reminder once', async t => {
  const mail = await mailServer(t)
  const ntfy = await ntfyServer(t)
  const server = await app(t, mail.url, { REMINDER_RETRY_MS: '1500', REMINDER_ATTEMPTS: '3' })
  const days = await utcDays(server)
  const user = await register(server)
  const topic = '/flaky'
  await setChannels(server, user, [{ type: 'ntfy', url: ntfy.origin + topic }])
  const child = await addChild(server, user, familyOf(user), 'Ada Lovelace', days.birth)

  ntfy.status = 503
  await addVaccine(server, user, child, { name: 'DTaP', date: days.lastYear, doseNumber: 3, nextDueDate: days.yesterday })
  await server.reminders.scanSoon()
  const failing = (): Array<{ at: number }> => ntfy.hits.filter(hit => hit.path === topic && hit.status === 503)
  await until(async () => {
    const [row] = await server.sql`select status from reminder_deliveries`
    return row?.status === 'given_up'
  }, 30_000, 'giving up')
  const hits = failing()
  t.equal(hits.length, 3, 'REMINDER_ATTEMPTS attempts')
  const waits = hits.slice(1).map((hit, i) => hit.at - hits[i].at)
  t.ok(waits[0] >= 1500, `waited REMINDER_RETRY_MS before the second attempt (${waits[0]} ms)`)
  t.ok(waits[1] >= 3000 && waits[1] > waits[0], `then twice as long (${waits[1]} ms)`)
  const gaveUp = (await call(server, user, 'GET', '/api/me/notifications')).json().channels[0]
  t.match(gaveUp.lastFailure, { reason: 'ntfy answered 503', gaveUp: true, at: String })
  const [row] = await server.sql`select attempts, last_error from reminder_deliveries`
  t.equal(row.attempts, 3)
  t.equal(row.last_error, 'ntfy answered 503', 'the status alone: the answer\'s body is never kept')

  // Another reminder meets the topic down, and then up again.
  await addVisit(server, user, child, days.tomorrow)
  const before = failing().length
  await server.reminders.scanSoon()
  await until(() => failing().length > before, 20_000, 'the first failure')
  // The receiver answered; the sender records the failure just after.
  await until(async () => (await server.sql`select 1 from reminder_deliveries where status <> 'given_up' and last_error is not null`).length === 1, 20_000, 'the failure recorded')
  const retrying = (await call(server, user, 'GET', '/api/me/notifications')).json().channels[0]
  t.match(retrying.lastFailure, { reason: /ntfy answered 503/, gaveUp: false }, 'GET shows it is being retried')
  ntfy.status = 200
  await until(() => reminders(ntfy, topic).length === 1, 20_000, 'the retry')
  await pause(3000)
  t.same(reminders(ntfy, topic), [`Ada: wellness visit on ${spelled(days.tomorrow)}`], 'arrived once')
  const after = (await call(server, user, 'GET', '/api/me/notifications')).json().channels[0]
  t.ok(Date.parse(after.lastDeliveryAt) > Date.parse(after.lastFailure.at), 'the delivery came after the failure')
  t.same((await server.sql`select status from reminder_deliveries order by id`).map(r => r.status), ['given_up', 'sent'])
})

/** HH:MM of a time `hours` from now in UTC, on the 24-hour clock. */
function utcClock (hours: number): string {
  const at = new Date(Date.now() + hours * 3_600_000)
  return `${String(at.getUTCHours()).padStart(2, '0')}:${String(at.getUTCMinutes()).padStart(2, '0')}`
}

t.test('quiet hours: nothing but test messages in them, in the user\'s time zone; what waits leaves when they end', async t => {
  const mail = await mailServer(t)
  const ntfy = await ntfyServer(t)
  const server = await app(t, mail.url)
  const days = await utcDays(server)
  const owner = await register(server)
  const member = await register(server)
  const familyId = familyOf(owner)
  await join(server, owner, familyId, member, 'member')
  const child = await addChild(server, owner, familyId, 'Noor Haddad', days.birth)
  await addVaccine(server, owner, child, { name: 'Varicella', date: days.lastYear, doseNumber: 1, nextDueDate: days.lastWeek })

  // The same hours, from an hour ago to two hours on in UTC: now is inside them in UTC and outside them in Kolkata (UTC+5:30).
  const hours = { from: utcClock(-1), to: utcClock(2) }
  await setChannels(server, owner, [{ type: 'ntfy', url: `${ntfy.origin}/quiet` }], { ...hours, timeZone: 'UTC' })
  t.equal(ntfy.posts.filter(post => post.path === '/quiet').length, 1, 'the test message went out in the quiet hours')
  await setChannels(server, member, [{ type: 'ntfy', url: `${ntfy.origin}/awake` }], { ...hours, timeZone: 'Asia/Kolkata' })

  await until(() => reminders(ntfy, '/awake').length === 1, 30_000, 'the reminder outside quiet hours')
  t.same(reminders(ntfy, '/awake'), [`Noor: Varicella vaccine dose 2 on ${spelled(days.lastWeek)}`])
  await server.reminders.scanSoon()
  await pause(3000)
  t.same(reminders(ntfy, '/quiet'), [], 'nothing in the quiet hours')
  const [waiting] = await server.sql`
    select d.id, d.status, j.run_at as "runAt", quiet_hours_end(s.quiet_from, s.quiet_to, s.time_zone, now()) as "quietEnd"
    from reminder_deliveries d
    join notification_settings s on s.user_id = d.user_id
    join graphile_worker.jobs j on j.key = 'reminder:' || d.id
    where d.user_id = ${owner.user.id}
  `
  t.equal(waiting.status, 'pending')
  t.ok(waiting.quietEnd instanceof Date)
  t.equal(waiting.runAt.getTime(), waiting.quietEnd.getTime(), 'its job runs when the quiet hours end')
  t.ok(waiting.runAt.getTime() > Date.now() + 3_600_000, 'in about two hours')

  // A job lost (a restored backup holds the reminders but not the queue) is made again by the next scan, and waits again.
  await server.sql`select graphile_worker.remove_job(${'reminder:' + waiting.id})`
  t.equal((await server.sql`select 1 from graphile_worker.jobs where key = ${'reminder:' + waiting.id}`).length, 0, 'the job is gone')
  await scanReminders(server.sql)
  await until(async () => {
    const [job] = await server.sql`select run_at as "runAt" from graphile_worker.jobs where key = ${'reminder:' + waiting.id}`
    return job !== undefined && job.runAt.getTime() === waiting.quietEnd.getTime()
  }, 20_000, 'the job made again, put off to the end of the quiet hours')
  t.same(reminders(ntfy, '/quiet'), [], 'still nothing in the quiet hours')

  // The quiet hours end (the user ends them): what waited leaves, once.
  await setChannels(server, owner, [{ type: 'ntfy', url: `${ntfy.origin}/quiet` }], null)
  await until(() => reminders(ntfy, '/quiet').length === 1, 30_000, 'the reminder once the quiet hours ended')
  await pause(2000)
  t.same(reminders(ntfy, '/quiet'), [`Noor: Varicella vaccine dose 2 on ${spelled(days.lastWeek)}`])
})

t.test('the end of quiet hours, across midnight and in time zones', async t => {
  const server = await build(t, { env: { JOB_WORKER: 'off' } })
  const end = async (from: string | null, to: string | null, zone: string | null, at: string): Promise<string | null> => {
    const [row] = await server.sql`select quiet_hours_end(${from}::time, ${to}::time, ${zone}, ${at}::timestamptz) as end`
    return row.end === null ? null : (row.end as Date).toISOString()
  }
  t.equal(await end('22:00', '07:00', 'Europe/Berlin', '2026-01-10T22:30:00Z'), '2026-01-11T06:00:00.000Z', 'after midnight local, across midnight')
  t.equal(await end('22:00', '07:00', 'Europe/Berlin', '2026-01-10T03:00:00Z'), '2026-01-10T06:00:00.000Z', 'before the end, the same day')
  t.equal(await end('22:00', '07:00', 'Europe/Berlin', '2026-01-10T12:00:00Z'), null, 'outside')
  t.equal(await end('22:00', '07:00', 'Europe/Berlin', '2026-01-10T21:00:00Z'), '2026-01-11T06:00:00.000Z', 'from the first minute')
  t.equal(await end('22:00', '07:00', 'Europe/Berlin', '2026-01-11T06:00:00Z'), null, 'to is the first minute outside')
  t.equal(await end('01:00', '06:00', 'America/New_York', '2026-07-01T07:00:00Z'), '2026-07-01T10:00:00.000Z', 'the same night, in summer time')
  t.equal(await end('01:00', '06:00', 'UTC', '2026-07-01T00:30:00Z'), null)
  t.equal(await end(null, null, null, '2026-07-01T00:30:00Z'), null, 'none')
})
