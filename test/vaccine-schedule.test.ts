import t, { type Test } from 'tap'
import ICAL from 'ical.js'
import { build, call, familyOf, login, register, type App, type Pair } from './helper'
import { exported, importArchive } from './import-helpers'
import { dueOfChildren } from '../sql/medical-events'
import { scheduleById } from '../io/schedules'
import { addMonths, parseSchedule, scheduleDue, type VaccineSchedule } from '../lib/schedules'

const OPEN = { REGISTRATION: 'open' }
const US = scheduleById('us-routine') as VaccineSchedule

/** A day counted from today in UTC, as the service counts it. */
function day (offset: number): string {
  return new Date(Date.now() + offset * 86400000).toISOString().slice(0, 10)
}

const REAL_NOW = Date.now

/** Makes `date` today (UTC) for the service, its clock moved and still running, until the test ends. */
function setToday (t: Test, date: string): void {
  const shift = Date.parse(`${date}T12:00:00Z`) - REAL_NOW()
  Date.now = () => REAL_NOW() + shift
  t.teardown(() => { Date.now = REAL_NOW })
}

async function addChild (app: App, pair: Pair, body: Record<string, unknown>): Promise<any> {
  const res = await call(app, pair, 'POST', '/api/children', { name: 'Kim', sex: 'female', familyId: familyOf(pair), ...body })
  if (res.statusCode !== 201) throw new Error(`child answered ${res.statusCode}: ${res.body}`)
  return res.json()
}

async function dose (app: App, pair: Pair, childId: number, vaccine: string, doseNumber: number | null, date: string, extra: Record<string, unknown> = {}): Promise<any> {
  const res = await call(app, pair, 'POST', `/api/children/${childId}/medical-events`, { type: 'vaccine', name: vaccine, vaccine, doseNumber, date, ...extra })
  if (res.statusCode !== 201) throw new Error(`dose answered ${res.statusCode}: ${res.body}`)
  return res.json()
}

/** The schedule's items of a due list as [vaccine, dose, dueFrom, dueBy, status]. */
function rows (items: any[]): Array<[string, number, string, string, string]> {
  return items.filter(item => item.source === 'schedule').map(item => [item.vaccine, item.doseNumber, item.dueFrom, item.dueBy, item.status])
}

async function dueOf (app: App, pair: Pair, childId: number, query = 'limit=1000'): Promise<any> {
  const res = await call(app, pair, 'GET', `/api/children/${childId}/due?${query}`)
  if (res.statusCode !== 200) throw new Error(`due answered ${res.statusCode}: ${res.body}`)
  return res.json()
}

function expectRefused (t: Test, res: { statusCode: number, json: () => any }, path: string, message: RegExp, what: string): void {
  t.equal(res.statusCode, 400, `${what}: 400`)
  const body = res.json()
  t.equal(body.code, 'VALIDATION_ERROR', `${what}: VALIDATION_ERROR`)
  t.match(body.details.issues, [{ path, message }], `${what}: ${JSON.stringify(body.details.issues)}`)
}

t.test('the shipped schedule: CDC\'s routine series, their doses, ranges and minimum intervals', async t => {
  t.same(US.series.map(series => `${series.code}:${series.doses.length}`), [
    'HepB:3', 'RV:3', 'DTaP:5', 'Hib:4', 'PCV:4', 'IPV:4', 'MMR:2', 'VAR:2', 'HepA:2', 'Tdap:1', 'HPV:2', 'MenACWY:2'
  ])
  t.match(US.source, { publisher: /CDC/, title: 'Child and Adolescent Immunization Schedule by Age', url: /^https:\/\/www\.cdc\.gov\// })
  t.ok(US.notes.some(note => /influenza/.test(note) && /COVID-19/.test(note)), 'the notes say influenza and COVID-19 are not in it')
  const dtap = US.series.find(series => series.code === 'DTaP')
  t.same(dtap?.doses[0].minIntervalToNext, { value: 4, unit: 'weeks' }, 'DTaP 1 to 2: at least 4 weeks')
  t.same(dtap?.doses[3].onTime, { from: { value: 15, unit: 'months' }, to: { value: 18, unit: 'months' } }, 'DTaP 4 at 15 to 18 months')
  t.equal(dtap?.doses[4].minIntervalToNext, null, 'the last dose has no next')

  const text = JSON.stringify(US)
  t.throws(() => parseSchedule('{', 'broken.json'), /broken\.json is not JSON/, 'a file that is not JSON')
  t.throws(() => parseSchedule(text.replace('"unit":"weeks"', '"unit":"fortnights"'), 'bad.json'), /bad\.json: \/series\/0\/doses\/0\/minIntervalToNext/, 'an unknown unit')
  t.throws(() => parseSchedule(text.replace('"number":2', '"number":3'), 'gap.json'), /HepB dose 2 is numbered 3/, 'doses out of order')
  const backwards = JSON.parse(text)
  backwards.series[0].doses[1].onTime.to = { value: 3, unit: 'weeks' }
  t.throws(() => parseSchedule(JSON.stringify(backwards), 'range.json'), /HepB dose 2: the on-time range ends before it starts/, 'a range that ends before it starts')
  const twice = JSON.parse(text)
  twice.series.push(twice.series[0])
  t.throws(() => parseSchedule(JSON.stringify(twice), 'twice.json'), /series HepB appears twice/)
})

t.test('the due list of a schedule, worked out without the database', async t => {
  const dtapOnly = { ...US, series: US.series.filter(series => series.code === 'DTaP') }
  // Born on 31 January: a month later is the last day of February.
  t.same(scheduleDue(dtapOnly, '2024-01-31', [], '2024-03-31').map(item => [item.doseNumber, item.dueFrom, item.dueBy, item.status]), [
    [1, '2024-03-31', '2024-04-29', 'due'],
    [2, '2024-05-31', '2024-06-29', 'upcoming'],
    [3, '2024-07-31', '2024-08-30', 'upcoming'],
    [4, '2025-04-30', '2025-08-30', 'upcoming'],
    [5, '2028-01-31', '2031-01-30', 'upcoming']
  ], 'ages by the calendar, ranges through their last month, and the first dose due on its first day')
  t.equal(addMonths('2024-02-29', 12), '2025-02-28', 'a year after 29 February')

  const given = (id: number, doseNumber: number | null, date: string) => ({ id, vaccine: 'DTaP', doseNumber, date })
  const left = (doses: ReturnType<typeof given>[]) => scheduleDue(dtapOnly, '2024-01-31', doses, '2024-06-01').map(item => item.doseNumber)
  t.same(left([given(1, null, '2024-04-02')]), [2, 3, 4, 5], 'a dose without a number counts for the lowest not recorded')
  t.same(left([given(1, 2, '2024-05-31'), given(2, null, '2024-04-02')]), [3, 4, 5], 'after the numbered ones')
  t.same(left([given(1, 9, '2024-04-02'), { id: 2, vaccine: 'dtap', doseNumber: 1, date: '2024-04-02' }]), [1, 2, 3, 4, 5], 'a dose beyond the series or of another code counts for nothing')
  const pushed = scheduleDue(dtapOnly, '2024-01-31', [given(1, 1, '2024-07-20')], '2024-08-01')
  t.match(pushed.find(item => item.doseNumber === 2), { doseNumber: 2, dueFrom: '2024-08-17', dueBy: '2024-08-17', status: 'upcoming', lastDose: { id: 1, date: '2024-07-20', doseNumber: 1 } },
    'dose 1 given late: dose 2 not before 4 weeks after it, and never due by a day before it is due from')
})

t.test('a child\'s due list at birth, at 7 months and at 5 years, worked out by hand', async t => {
  setToday(t, '2024-03-10')
  const app = await build(t, { env: OPEN })
  let ada = await register(app)
  const kim = (await addChild(app, ada, { dateOfBirth: '2024-03-10', scheduleId: 'us-routine' })).id

  // Born today: the birth dose of hepatitis B is due today, every other dose is ahead.
  const atBirth = await dueOf(app, ada, kim)
  t.equal(atBirth.meta.total, 34, 'every dose of the schedule')
  t.same(rows(atBirth.data.slice(0, 8)), [
    ['HepB', 1, '2024-03-10', '2024-03-10', 'due'],
    ['HepB', 2, '2024-04-10', '2024-06-09', 'upcoming'],
    ['DTaP', 1, '2024-05-10', '2024-06-09', 'upcoming'],
    ['Hib', 1, '2024-05-10', '2024-06-09', 'upcoming'],
    ['IPV', 1, '2024-05-10', '2024-06-09', 'upcoming'],
    ['PCV', 1, '2024-05-10', '2024-06-09', 'upcoming'],
    ['RV', 1, '2024-05-10', '2024-06-09', 'upcoming'],
    ['DTaP', 2, '2024-07-10', '2024-08-09', 'upcoming']
  ])
  t.same(rows(atBirth.data.slice(-1)), [['MenACWY', 2, '2040-03-10', '2041-03-09', 'upcoming']], 'the last: MenACWY at 16 years')
  t.match(atBirth.data[0], {
    source: 'schedule', name: 'Hepatitis B', dueDate: '2024-03-10', overdue: false, daysUntilDue: 0, lastDose: null
  }, 'the fields older clients read')

  // Seven months old: the 2- and 4-month doses given, DTaP 2 late.
  setToday(t, '2024-10-10')
  ada = await login(app, ada.user.email)
  await dose(app, ada, kim, 'HepB', 1, '2024-03-10')
  await dose(app, ada, kim, 'HepB', 2, '2024-04-15')
  for (const code of ['Hib', 'PCV', 'IPV', 'RV', 'DTaP']) await dose(app, ada, kim, code, 1, '2024-05-13')
  for (const code of ['Hib', 'PCV', 'IPV']) await dose(app, ada, kim, code, 2, '2024-07-15')
  await dose(app, ada, kim, 'RV', null, '2024-07-15')
  const dtap2 = await dose(app, ada, kim, 'DTaP', 2, '2024-09-20')
  const atSeven = await dueOf(app, ada, kim)
  t.equal(atSeven.meta.total, 22, '34 doses less the 12 given')
  t.same(rows(atSeven.data.slice(0, 8)), [
    // The 6-month doses: on time through the day before 7 months.
    ['Hib', 3, '2024-09-10', '2024-10-09', 'overdue'],
    ['PCV', 3, '2024-09-10', '2024-10-09', 'overdue'],
    ['RV', 3, '2024-09-10', '2024-10-09', 'overdue'],
    ['HepB', 3, '2024-09-10', '2025-10-09', 'due'],
    ['IPV', 3, '2024-09-10', '2025-10-09', 'due'],
    // DTaP 2 on 20 September: dose 3 not before 4 weeks after it, on time till then.
    ['DTaP', 3, '2024-10-18', '2024-10-18', 'upcoming'],
    ['HepA', 1, '2025-03-10', '2026-03-09', 'upcoming'],
    ['Hib', 4, '2025-03-10', '2025-07-09', 'upcoming']
  ], 'overdue first, then by dueFrom, then by code')
  t.match(atSeven.data.find((item: any) => item.vaccine === 'RV'), { lastDose: { date: '2024-07-15', doseNumber: null } }, 'RV given without a number counted as dose 2')
  t.match(atSeven.data.find((item: any) => item.vaccine === 'DTaP'), { lastDose: { id: dtap2.id, date: '2024-09-20', doseNumber: 2 }, overdue: false, daysUntilDue: 8 })
  t.notOk(atSeven.data.some((item: any) => item.vaccine === 'HepB' && item.doseNumber < 3), 'doses given are not listed')

  // Five years old: hepatitis A never given, MMR 2 and the 4-year doses due, varicella complete.
  setToday(t, '2029-03-10')
  ada = await login(app, ada.user.email)
  await dose(app, ada, kim, 'HepB', 3, '2024-10-15')
  for (const code of ['Hib', 'PCV', 'RV', 'IPV']) await dose(app, ada, kim, code, 3, '2024-10-15')
  await dose(app, ada, kim, 'DTaP', 3, '2024-10-20')
  await dose(app, ada, kim, 'DTaP', 4, '2025-07-01')
  for (const code of ['Hib', 'PCV']) await dose(app, ada, kim, code, 4, '2025-03-20')
  await dose(app, ada, kim, 'MMR', 1, '2025-03-20')
  await dose(app, ada, kim, 'VAR', 1, '2025-03-20')
  await dose(app, ada, kim, 'VAR', 2, '2028-04-01')
  // A vaccine outside the schedule, with its own next due date.
  const flu = await call(app, ada, 'POST', `/api/children/${kim}/medical-events`, { type: 'vaccine', name: 'Flu', date: '2028-10-01', nextDueDate: '2029-10-01' })
  t.equal(flu.statusCode, 201)
  const atFive = await dueOf(app, ada, kim)
  t.same(atFive.data.map((item: any) => [item.source, item.vaccine, item.doseNumber, item.dueFrom, item.dueBy, item.status]), [
    // Catch-up: hepatitis A's range has passed.
    ['schedule', 'HepA', 1, '2025-03-10', '2026-03-09', 'overdue'],
    ['schedule', 'HepA', 2, '2025-09-10', '2026-03-09', 'overdue'],
    ['schedule', 'DTaP', 5, '2028-03-10', '2031-03-09', 'due'],
    ['schedule', 'IPV', 4, '2028-03-10', '2031-03-09', 'due'],
    ['schedule', 'MMR', 2, '2028-03-10', '2031-03-09', 'due'],
    ['nextDueDate', null, null, '2029-10-01', '2029-10-01', 'upcoming'],
    ['schedule', 'HPV', 1, '2035-03-10', '2037-03-09', 'upcoming'],
    ['schedule', 'MenACWY', 1, '2035-03-10', '2037-03-09', 'upcoming'],
    ['schedule', 'Tdap', 1, '2035-03-10', '2037-03-09', 'upcoming'],
    ['schedule', 'HPV', 2, '2035-09-10', '2038-03-09', 'upcoming'],
    ['schedule', 'MenACWY', 2, '2040-03-10', '2041-03-09', 'upcoming']
  ], 'complete series (VAR, HepB, RV, Hib, PCV) are gone; the nextDueDate item among the schedule\'s')
  t.match(atFive.data[0], { name: 'Hepatitis A (2-dose series)', overdue: true, daysUntilDue: -1461, lastDose: null })
  t.match(atFive.data[5], { name: 'Flu', dueDate: '2029-10-01', overdue: false, lastDose: { id: flu.json().id, doseNumber: null } })

  const page = await dueOf(app, ada, kim, 'limit=2&offset=4')
  t.same(page.meta, { total: 11, limit: 2, offset: 4 }, 'paginated as before')
  t.same(page.data, atFive.data.slice(4, 6))

  // What a reminder scanner asks: the items due or overdue today, per child.
  const { children, lastChildId } = await dueOfChildren(app.sql, { familyId: familyOf(ada) }, '2029-03-10', ['due', 'overdue'])
  t.same(children.map(child => [child.childId, child.items.map(item => `${item.vaccine} ${item.doseNumber} ${item.status}`)]), [
    [kim, ['HepA 1 overdue', 'HepA 2 overdue', 'DTaP 5 due', 'IPV 4 due', 'MMR 2 due']]
  ])
  t.equal(lastChildId, kim)
  const scan = await dueOfChildren(app.sql, { afterChildId: 0, limit: 10 }, '2029-03-10', ['due'])
  t.same(scan.children.map(child => child.items.length), [3], 'every child, batch by batch')
  t.same((await dueOfChildren(app.sql, { afterChildId: kim, limit: 10 }, '2029-03-10')).lastChildId, null, 'a scan ends')
})

t.test('GET /api/schedules lists the schedules for any signed-in user', async t => {
  const app = await build(t, { env: OPEN })
  const ada = await register(app)
  const res = await call(app, ada, 'GET', '/api/schedules')
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.same(body.meta, { total: 1, limit: 50, offset: 0 })
  t.same(body.data, [JSON.parse(JSON.stringify(US))], 'the shipped schedule, as its file holds it')
  t.same((await call(app, ada, 'GET', '/api/schedules?offset=1')).json(), { data: [], meta: { total: 1, limit: 50, offset: 1 } })
  t.equal((await call(app, ada, 'GET', '/api/schedules?limit=0')).statusCode, 400)
  const anonymous = await app.inject({ method: 'GET', url: '/api/schedules' })
  t.equal(anonymous.statusCode, 401, 'a token is needed')
})

t.test('a child\'s scheduleId: none unless chosen, an unknown one refused, carried by the changes and the export', async t => {
  const app = await build(t, { env: OPEN })
  const ada = await register(app)
  const plain = await addChild(app, ada, { dateOfBirth: '2023-01-01' })
  t.equal(plain.scheduleId, null, 'none by default')
  const sam = await addChild(app, ada, { dateOfBirth: '2023-01-01', scheduleId: 'us-routine' })
  t.equal(sam.scheduleId, 'us-routine')
  t.equal((await call(app, ada, 'PATCH', `/api/children/${sam.id}`, { name: 'Samuel' })).json().scheduleId, 'us-routine', 'a PATCH without it keeps it')
  t.equal((await call(app, ada, 'PATCH', `/api/children/${sam.id}`, { scheduleId: null })).json().scheduleId, null, 'null clears it')
  t.equal((await call(app, ada, 'PUT', `/api/children/${sam.id}`, { name: 'Sam', dateOfBirth: '2023-01-01', sex: 'male', scheduleId: 'us-routine' })).json().scheduleId, 'us-routine')
  t.equal((await call(app, ada, 'PUT', `/api/children/${sam.id}`, { name: 'Sam', dateOfBirth: '2023-01-01', sex: 'male' })).json().scheduleId, null, 'a PUT without it sets none')
  for (const [method, url, body] of [
    ['POST', '/api/children', { name: 'X', dateOfBirth: '2023-01-01', sex: 'male', familyId: familyOf(ada), scheduleId: 'uk-routine' }],
    ['PATCH', `/api/children/${sam.id}`, { scheduleId: 'US-ROUTINE' }],
    ['PATCH', `/api/children/${sam.id}`, { scheduleId: 7 }],
    ['PUT', `/api/children/${sam.id}`, { name: 'Sam', dateOfBirth: '2023-01-01', sex: 'male', scheduleId: 'none' }]
  ] as Array<[string, string, object]>) {
    expectRefused(t, await call(app, ada, method, url, body), '/body/scheduleId', /./, `${method} ${JSON.stringify(body)}`)
  }
  t.equal((await call(app, ada, 'GET', `/api/children/${sam.id}`)).json().scheduleId, null, 'nothing written by a refused write')
  t.equal((await app.sql`select count(*)::int as n from children`)[0].n, 2)
  const changes = (await call(app, ada, 'GET', `/api/families/${familyOf(ada)}/changes`)).json().data
  t.same(changes.filter((c: any) => c.kind === 'child' && c.id === sam.id).map((c: any) => c.record.scheduleId), ['us-routine', 'us-routine', null, 'us-routine', null], 'the changes feed carries it')
  const history = (await call(app, ada, 'GET', `/api/children/${sam.id}/history`)).json().data
  t.same(history[0].fields, { scheduleId: { from: 'us-routine', to: null } }, 'and the history')
  await t.rejects(app.sql`update children set schedule_id = 'not an id' where id = ${sam.id}`, { code: '23514' }, 'the database holds its form')
})

t.test('a vaccine record names a series of its child\'s schedule', async t => {
  const app = await build(t, { env: OPEN })
  const ada = await register(app)
  const kim = (await addChild(app, ada, { dateOfBirth: '2023-01-01', scheduleId: 'us-routine' })).id
  const lou = (await addChild(app, ada, { dateOfBirth: '2023-01-01' })).id
  const base = { date: '2023-03-01', type: 'vaccine', name: 'DTaP' }
  const count = async () => (await app.sql`select count(*)::int as n from medical_events`)[0].n as number

  const given = await call(app, ada, 'POST', `/api/children/${kim}/medical-events`, { ...base, vaccine: 'DTaP', doseNumber: 1 })
  t.equal(given.statusCode, 201)
  t.match(given.json(), { vaccine: 'DTaP', doseNumber: 1 })
  t.same((await call(app, ada, 'GET', `/api/medical-events/${given.json().id}`)).json(), given.json(), 'read back the same')
  const flat = await call(app, ada, 'POST', '/api/medical-events', { childId: kim, ...base, vaccine: 'MMR' })
  t.equal(flat.statusCode, 201, 'without a dose number too, and flat')
  t.equal((await call(app, ada, 'POST', `/api/children/${kim}/medical-events`, { ...base, name: 'Stitches', type: 'procedure' })).json().vaccine, null, 'null when not given')

  const before = await count()
  for (const [what, childId, body, message] of [
    ['a code of no series', kim, { ...base, vaccine: 'BCG' }, /must be a series of the child's schedule us-routine: HepB, RV, DTaP/],
    ['a code in the wrong case', kim, { ...base, vaccine: 'dtap' }, /must be a series of the child's schedule/],
    ['a child without a schedule', lou, { ...base, vaccine: 'DTaP' }, /the child follows no vaccine schedule/],
    ['a procedure', kim, { ...base, type: 'procedure', vaccine: 'DTaP' }, /only for a vaccine/],
    ['not a code at all', kim, { ...base, vaccine: 'D T a P' }, /pattern/]
  ] as Array<[string, number, object, RegExp]>) {
    expectRefused(t, await call(app, ada, 'POST', `/api/children/${childId}/medical-events`, body), '/body/vaccine', message, `POST with ${what}`)
    expectRefused(t, await call(app, ada, 'POST', '/api/medical-events', { childId, ...body }), '/body/vaccine', message, `flat POST with ${what}`)
  }
  t.equal(await count(), before, 'no refused POST wrote a row')
  const id = given.json().id
  expectRefused(t, await call(app, ada, 'PUT', `/api/medical-events/${id}`, { ...base, vaccine: 'Polio' }), '/body/vaccine', /must be a series/, 'PUT')
  expectRefused(t, await call(app, ada, 'PATCH', `/api/medical-events/${id}`, { vaccine: 'Polio' }), '/body/vaccine', /must be a series/, 'PATCH')
  expectRefused(t, await call(app, ada, 'PATCH', `/api/medical-events/${id}`, { type: 'medication', doseNumber: null }), '/body/vaccine', /only for a vaccine/, 'PATCH of the type alone keeps the series')
  const changed = await call(app, ada, 'PATCH', `/api/medical-events/${id}`, { vaccine: 'IPV' })
  t.equal(changed.statusCode, 200)
  t.same((await call(app, ada, 'GET', `/api/medical-events/${id}/history`)).json().data[0].fields, { vaccine: { from: 'DTaP', to: 'IPV' } }, 'the history names it')
  await t.rejects(app.sql`insert into medical_events (child_id, date, type, name, vaccine) values (${kim}, '2023-03-01', 'procedure', 'X', 'DTaP')`, { code: '23514' }, 'the database keeps it to vaccines')

  // The child's schedule changes: its records stay, and a write must name a series of the schedule it then has.
  t.equal((await call(app, ada, 'PATCH', `/api/children/${kim}`, { scheduleId: null })).statusCode, 200)
  t.equal((await call(app, ada, 'GET', `/api/medical-events/${id}`)).json().vaccine, 'IPV', 'the record keeps its series')
  expectRefused(t, await call(app, ada, 'PATCH', `/api/medical-events/${id}`, { lotNumber: 'L1' }), '/body/vaccine', /follows no vaccine schedule/, 'a later write of it')
  t.equal((await call(app, ada, 'PATCH', `/api/medical-events/${id}`, { lotNumber: 'L1', vaccine: null })).statusCode, 200, 'once the series is cleared')

  const exported = (await call(app, ada, 'GET', `/api/children/${kim}/export?format=json`)).json()
  t.equal(exported.child.scheduleId, null)
  t.same(exported.medicalEvents.map((event: any) => event.vaccine).sort(), ['MMR', null, null], 'the export carries the series')
  const changes = (await call(app, ada, 'GET', `/api/families/${familyOf(ada)}/changes`)).json().data
  t.ok(changes.some((c: any) => c.kind === 'medicalEvent' && c.record?.vaccine === 'MMR'), 'and the changes feed')
})

t.test('the calendar feed shows the schedule\'s doses on their dueFrom, each with a stable UID', async t => {
  const app = await build(t, { env: OPEN })
  const ada = await register(app)
  const birth = day(-40)
  const kim = await addChild(app, ada, { dateOfBirth: birth, scheduleId: 'us-routine' })
  const feed = (await call(app, ada, 'POST', '/api/me/calendar-feeds', { familyId: familyOf(ada) })).json()
  const read = async () => {
    const res = await app.inject({ method: 'GET', url: feed.url })
    t.equal(res.statusCode, 200)
    return new ICAL.Component(ICAL.parse(res.body)).getAllSubcomponents('vevent')
  }
  const uid = (code: string, n: number) => `schedule-us-routine-child-${kim.id}-${code}-dose-${n}@child-health`
  const events = await read()
  t.equal(events.length, 34, 'every dose not recorded, all within the feed\'s range')
  const first: any = events[0]
  t.equal(first.getFirstPropertyValue('uid'), uid('HepB', 1))
  t.equal(first.getFirstPropertyValue('summary'), 'Kim: HepB due (dose 1)')
  t.equal(first.getFirstProperty('dtstart').getFirstValue().toString(), birth, 'an all-day event on dueFrom')
  t.equal(first.getFirstProperty('dtstart').type, 'date')
  t.match(first.getFirstPropertyValue('description'), /^Hepatitis B, dose 1 of the schedule: due from /)
  const sequence = first.getFirstPropertyValue('sequence')

  await dose(app, ada, kim.id, 'HepB', 1, birth)
  const after = await read()
  const uids = after.map((event: any) => event.getFirstPropertyValue('uid'))
  t.notOk(uids.includes(uid('HepB', 1)), 'a recorded dose leaves the feed')
  const second: any = after.find((event: any) => event.getFirstPropertyValue('uid') === uid('HepB', 2))
  t.ok(second, 'the next keeps its UID')
  t.ok(second.getFirstPropertyValue('sequence') > sequence, 'with a higher SEQUENCE')
  t.equal(second.getFirstProperty('dtstart').getFirstValue().toString(), addMonths(birth, 1), 'on its dueFrom')
})

t.test('a family archive carries scheduleId and each record\'s series, also one the schedule no longer has', async t => {
  const app = await build(t, { env: OPEN })
  const ada = await register(app)
  const kim = await addChild(app, ada, { dateOfBirth: '2023-01-01', scheduleId: 'us-routine' })
  const lou = await addChild(app, ada, { name: 'Lou', dateOfBirth: '2023-02-01' })
  await dose(app, ada, kim.id, 'DTaP', 1, '2023-03-01')
  await dose(app, ada, lou.id, 'MMR', null, '2023-03-01', { vaccine: undefined })
  const kept = await dose(app, ada, lou.id, 'HepB', 1, '2023-02-01', { vaccine: undefined })
  // Lou followed the schedule for a while: the record keeps its series after.
  await call(app, ada, 'PATCH', `/api/children/${lou.id}`, { scheduleId: 'us-routine' })
  t.equal((await call(app, ada, 'PATCH', `/api/medical-events/${kept.id}`, { vaccine: 'HepB' })).statusCode, 200)
  await call(app, ada, 'PATCH', `/api/children/${lou.id}`, { scheduleId: null })

  const archive = await exported(app, ada, familyOf(ada))
  const bo = await register(app)
  const res = await importArchive(app, bo, archive)
  t.equal(res.statusCode, 201, res.body)
  const children = (await call(app, bo, 'GET', `/api/children?familyId=${res.json().family.id}`)).json().data
  const view = async (name: string) => {
    const child = children.find((item: any) => item.name === name)
    const events = (await call(app, bo, 'GET', `/api/children/${child.id}/medical-events`)).json().data
    return { scheduleId: child.scheduleId, series: events.map((event: any) => event.vaccine).sort() }
  }
  t.same(await view('Kim'), { scheduleId: 'us-routine', series: ['DTaP'] })
  t.same(await view('Lou'), { scheduleId: null, series: ['HepB', null] }, 'a series the child\'s schedule no longer has is kept')
  const due = (await call(app, bo, 'GET', `/api/children/${children.find((item: any) => item.name === 'Kim').id}/due?limit=1000`)).json()
  t.notOk(due.data.some((item: any) => item.vaccine === 'DTaP' && item.doseNumber === 1), 'the imported dose counts')
})
