import t from 'tap'
import { build, call, familyOf, register } from './helper'
import { ntfyServer, until, type NtfyServer } from './reminder-receivers'
import { addChild, setChannels, spelled, utcDays } from './reminder-data'

/** The reminders a topic received, without its test message. */
function reminders (ntfy: NtfyServer, topic: string): string[] {
  return ntfy.posts.filter(post => post.path === topic && !/test message/.test(post.title)).map(post => post.text)
}

const pause = async (ms: number): Promise<void> => { await new Promise(resolve => setTimeout(resolve, ms)) }

/** The date and the time of a moment in UTC, as a reminder tells them to a user without a time zone. */
/** A moment's day and time as an English reminder in UTC writes them. */
function utcDayAndTime (iso: string): [string, string] {
  return [spelled(iso.slice(0, 10)), new Intl.DateTimeFormat('en', { timeStyle: 'short', timeZone: 'UTC' }).format(new Date(iso))]
}

t.test('the schedule\'s due and overdue doses and a medicine dose allowed again are reminded once; upcoming doses, recorded doses and courses that do not remind are not', async t => {
  const ntfy = await ntfyServer(t)
  const server = await build(t, { env: { WEBHOOK_ALLOW_PRIVATE: 'true', REGISTRATION: 'open', JOB_WORKER: 'on' } })
  const owner = await register(server)
  const familyId = familyOf(owner)
  const [{ birth }] = await server.sql<Array<{ birth: string }>>`select ((now() at time zone 'UTC')::date - 75)::text as birth`
  const lea = await addChild(server, owner, familyId, 'Lea Svensson', birth)
  t.equal((await call(server, owner, 'PATCH', `/api/children/${lea}`, { scheduleId: 'us-routine' })).statusCode, 200)
  const days = await utcDays(server)
  // Hepatitis B's first dose is recorded: it is not reminded of.
  const hepB = await call(server, owner, 'POST', `/api/children/${lea}/medical-events`, { type: 'vaccine', name: 'Hepatitis B', vaccine: 'HepB', doseNumber: 1, date: birth })
  t.equal(hepB.statusCode, 201, hepB.body)

  // A course that reminds, whose last dose was five hours ago at a four-hour interval; and one that does not remind.
  const fiveHoursAgo = new Date(Date.now() - 5 * 3600_000).toISOString()
  const course = async (name: string, remind: boolean): Promise<number> => {
    const res = await call(server, owner, 'POST', `/api/children/${lea}/medicine-courses`, {
      name, doseAmount: 5, doseUnit: 'ml', minIntervalHours: 4, startDate: days.yesterday, remind
    })
    t.equal(res.statusCode, 201, res.body)
    const id = res.json().id as number
    t.equal((await call(server, owner, 'POST', `/api/medicine-courses/${id}/doses`, { givenAt: fiveHoursAgo })).statusCode, 201)
    return id
  }
  const ibuprofen = await course('Ibuprofen', true)
  await course('Paracetamol', false)
  const allowedAt = (await call(server, owner, 'GET', `/api/medicine-courses/${ibuprofen}`)).json().nextDoseAllowedAt as string
  t.ok(Date.parse(allowedAt) < Date.now(), 'the next ibuprofen dose is allowed already')

  const due = (await call(server, owner, 'GET', `/api/children/${lea}/due?limit=100`)).json().data as any[]
  const scheduled = due.filter(item => item.source === 'schedule' && item.status !== 'upcoming')
  t.ok(scheduled.length >= 5, `doses of 2 months are due or overdue at 75 days: ${scheduled.length}`)
  t.ok(due.some(item => item.source === 'schedule' && item.status === 'upcoming'), 'later doses are upcoming')
  t.notOk(scheduled.some(item => item.vaccine === 'HepB' && item.doseNumber === 1), 'the recorded dose is not due')
  const [day, time] = utcDayAndTime(allowedAt)
  const expected = [
    ...scheduled.map(item => `Lea: ${item.name} dose ${item.doseNumber}${item.status === 'overdue' ? ' (overdue)' : ''} on ${spelled(item.status === 'overdue' ? item.dueBy : item.dueFrom)}`),
    `Lea: next dose of Ibuprofen allowed from ${time} on ${day}`
  ].sort()

  const topic = '/lea'
  await setChannels(server, owner, [{ type: 'ntfy', url: ntfy.origin + topic }])
  await until(() => reminders(ntfy, topic).length >= expected.length, 30_000, 'the reminders')
  await server.reminders.scanSoon()
  await pause(2000)
  t.same(reminders(ntfy, topic).sort(), expected, 'each due or overdue dose of the schedule and the allowed ibuprofen dose, once; nothing of paracetamol or of upcoming doses')
  for (const text of reminders(ntfy, topic)) t.notOk(text.includes('Svensson'), 'no last name')

  // The next dose given: the course's next allowed dose is later, and nothing more is sent for it.
  t.equal((await call(server, owner, 'POST', `/api/medicine-courses/${ibuprofen}/doses`, { givenAt: new Date().toISOString() })).statusCode, 201)
  await server.reminders.scanSoon()
  await pause(2000)
  t.equal(reminders(ntfy, topic).length, expected.length, 'a dose not yet allowed is not reminded of')
})
