import t, { type Test } from 'tap'
import ICAL from 'ical.js'
import { issuesOf } from './fhir-validate'
import { build, call, familyOf, join, login, register, type App, type Pair } from './helper'

const OPEN = { REGISTRATION: 'open' }

/** A day counted from today in UTC, as the service counts it. */
function day (offset: number, from = Date.now()): string {
  return new Date(from + offset * 86400000).toISOString().slice(0, 10)
}

async function addChild (app: App, pair: Pair, name: string): Promise<number> {
  const res = await call(app, pair, 'POST', '/api/children', { name, dateOfBirth: day(-1500), sex: 'female', familyId: familyOf(pair) })
  if (res.statusCode !== 201) throw new Error(`child answered ${res.statusCode}: ${res.body}`)
  return res.json().id
}

async function dose (app: App, pair: Pair, childId: number, body: Record<string, unknown>): Promise<any> {
  const res = await call(app, pair, 'POST', `/api/children/${childId}/medical-events`, { type: 'vaccine', ...body })
  if (res.statusCode !== 201) throw new Error(`dose answered ${res.statusCode}: ${res.body}`)
  return res.json()
}

async function count (app: App): Promise<number> {
  const [row] = await app.sql`select count(*)::int as n from medical_events`
  return row.n
}

/**
 * A nextDueDate item as the list answers it: the fields it had before the
 * schedules, and those every item has since, which they decide.
 */
function fromNextDue (item: { name: string, dueDate: string, overdue: boolean, daysUntilDue: number, lastDose: { id: number, date: string, doseNumber: number | null } }): Record<string, unknown> {
  const status = item.overdue ? 'overdue' : item.daysUntilDue === 0 ? 'due' : 'upcoming'
  const doseNumber = item.lastDose.doseNumber === null ? null : item.lastDose.doseNumber + 1
  return { source: 'nextDueDate', vaccine: null, doseNumber, dueFrom: item.dueDate, dueBy: item.dueDate, status, ...item }
}

function expectRefused (t: Test, res: { statusCode: number, json: () => any }, issues: Array<{ path: string, message: RegExp | string }>, what: string): void {
  t.equal(res.statusCode, 400, `${what}: 400`)
  const body = res.json()
  t.equal(body.code, 'VALIDATION_ERROR', `${what}: VALIDATION_ERROR`)
  t.match(body.details.issues, issues, `${what}: ${JSON.stringify(body.details.issues)}`)
  t.equal(body.details.issues.length, issues.length, `${what}: only those issues`)
}

t.test('a vaccine carries doseNumber, lotNumber, site and nextDueDate through POST, GET, PUT, PATCH and the list', async t => {
  const app = await build(t, { env: OPEN })
  const ada = await register(app)
  const kim = await addChild(app, ada, 'Kim')
  const hundred = 'x'.repeat(100)

  const created = await dose(app, ada, kim, { date: day(-10), name: 'MMR', doseNumber: 1, lotNumber: '  AB-12  ', site: hundred, nextDueDate: day(300) })
  t.match(created, { type: 'vaccine', name: 'MMR', doseNumber: 1, lotNumber: 'AB-12', site: hundred, nextDueDate: day(300) }, 'trimmed, 100 characters kept, a due date in the future')
  const read = await call(app, ada, 'GET', `/api/medical-events/${created.id}`)
  t.same(read.json(), created, 'read back the same')

  const plain = await dose(app, ada, kim, { date: day(-5), name: 'Hep B', lotNumber: '', site: '   ' })
  t.same([plain.doseNumber, plain.lotNumber, plain.site, plain.nextDueDate], [null, null, null, null], 'omitted and empty fields answer null')
  const procedure = (await call(app, ada, 'POST', '/api/medical-events', { childId: kim, date: day(-5), type: 'procedure', name: 'Stitches', doseNumber: null })).json()
  t.same([procedure.doseNumber, procedure.lotNumber, procedure.site, procedure.nextDueDate], [null, null, null, null], 'another type answers them null')

  const sameDay = await dose(app, ada, kim, { date: day(-3), name: 'Polio', nextDueDate: day(-3), doseNumber: 20 })
  t.equal(sameDay.nextDueDate, day(-3), 'due the day of the dose itself')
  t.equal(sameDay.doseNumber, 20, 'dose 20 is the highest')

  const put = await call(app, ada, 'PUT', `/api/medical-events/${created.id}`, { date: day(-9), type: 'vaccine', name: 'MMR', doseNumber: 2, lotNumber: 'CD-34' })
  t.equal(put.statusCode, 200)
  t.match(put.json(), { doseNumber: 2, lotNumber: 'CD-34', site: null, nextDueDate: null }, 'PUT replaces: omitted fields become null')

  const patched = await call(app, ada, 'PATCH', `/api/medical-events/${created.id}`, { site: 'Left thigh', nextDueDate: day(20) })
  t.equal(patched.statusCode, 200)
  t.match(patched.json(), { doseNumber: 2, lotNumber: 'CD-34', site: 'Left thigh', nextDueDate: day(20) }, 'PATCH keeps what it does not name')
  const cleared = await call(app, ada, 'PATCH', `/api/medical-events/${created.id}`, { lotNumber: null })
  t.match(cleared.json(), { doseNumber: 2, lotNumber: null, site: 'Left thigh', nextDueDate: day(20) }, 'null clears')

  const list = await call(app, ada, 'GET', `/api/children/${kim}/medical-events?type=vaccine`)
  t.same(list.json().data.find((item: any) => item.id === created.id), cleared.json(), 'the list answers the same record')

  const history = await call(app, ada, 'GET', `/api/medical-events/${created.id}/history`)
  t.same(history.json().data[0].fields, { lotNumber: { from: 'CD-34', to: null } }, 'the history names the field that changed')
})

t.test('each rule is refused with a 400 naming the field, and nothing is written', async t => {
  const app = await build(t, { env: OPEN })
  const ada = await register(app)
  const kim = await addChild(app, ada, 'Kim')
  const base = `/api/children/${kim}/medical-events`
  const vaccine = { date: day(-10), type: 'vaccine', name: 'MMR' }

  const before = await count(app)
  const cases: Array<[string, Record<string, unknown>, Array<{ path: string, message: RegExp | string }>]> = [
    ['a dose number on a procedure', { ...vaccine, type: 'procedure', doseNumber: 1 }, [{ path: '/body/doseNumber', message: 'only for a vaccine' }]],
    ['a medication with a lot, a site and a due date', { ...vaccine, type: 'medication', lotNumber: 'L1', site: 'Arm', nextDueDate: day(10) }, [
      { path: '/body/lotNumber', message: 'only for a vaccine' },
      { path: '/body/site', message: 'only for a vaccine' },
      { path: '/body/nextDueDate', message: 'only for a vaccine' }
    ]],
    ['a next dose due before this one', { ...vaccine, nextDueDate: day(-11) }, [{ path: '/body/nextDueDate', message: 'must not be before date' }]],
    ['dose 0', { ...vaccine, doseNumber: 0 }, [{ path: '/body/doseNumber', message: /must be >= 1/ }]],
    ['dose 21', { ...vaccine, doseNumber: 21 }, [{ path: '/body/doseNumber', message: /must be <= 20/ }]],
    ['a fractional dose', { ...vaccine, doseNumber: 1.5 }, [{ path: '/body/doseNumber', message: /integer/ }]],
    ['a dose number as text', { ...vaccine, doseNumber: '2' }, [{ path: '/body/doseNumber', message: /integer/ }]],
    ['a lot number of 101 characters', { ...vaccine, lotNumber: 'L'.repeat(101) }, [{ path: '/body/lotNumber', message: /more than 100 characters/ }]],
    ['a site of 101 characters', { ...vaccine, site: 's'.repeat(101) }, [{ path: '/body/site', message: /more than 100 characters/ }]],
    ['a due date that does not exist', { ...vaccine, nextDueDate: '2031-02-30' }, [{ path: '/body/nextDueDate', message: /date/ }]],
    ['a due date that is not a date', { ...vaccine, nextDueDate: 'next spring' }, [{ path: '/body/nextDueDate', message: /date/ }]]
  ]
  for (const [what, body, issues] of cases) {
    expectRefused(t, await call(app, ada, 'POST', base, body), issues, `POST ${what}`)
    expectRefused(t, await call(app, ada, 'POST', '/api/medical-events', { childId: kim, ...body }), issues, `flat POST ${what}`)
  }
  t.equal(await count(app), before, 'no refused POST wrote a row')

  const given = await dose(app, ada, kim, { date: day(-10), name: 'MMR', doseNumber: 1, lotNumber: 'L1', nextDueDate: day(30) })
  const changesBefore = (await app.sql`select count(*)::int as n from changes`)[0].n
  expectRefused(t, await call(app, ada, 'PUT', `/api/medical-events/${given.id}`, { date: day(-10), type: 'procedure', name: 'MMR', doseNumber: 1 }),
    [{ path: '/body/doseNumber', message: 'only for a vaccine' }], 'PUT of a procedure with a dose')
  expectRefused(t, await call(app, ada, 'PUT', `/api/medical-events/${given.id}`, { date: day(-10), type: 'vaccine', name: 'MMR', nextDueDate: day(-20) }),
    [{ path: '/body/nextDueDate', message: 'must not be before date' }], 'PUT with the next dose due before')
  expectRefused(t, await call(app, ada, 'PATCH', `/api/medical-events/${given.id}`, { type: 'medication' }), [
    { path: '/body/doseNumber', message: 'only for a vaccine' },
    { path: '/body/lotNumber', message: 'only for a vaccine' },
    { path: '/body/nextDueDate', message: 'only for a vaccine' }
  ], 'PATCH of the type alone: the merged record keeps its dose')
  expectRefused(t, await call(app, ada, 'PATCH', `/api/medical-events/${given.id}`, { date: day(-1), nextDueDate: day(-2) }),
    [{ path: '/body/nextDueDate', message: 'must not be before date' }], 'PATCH of both dates')
  expectRefused(t, await call(app, ada, 'PATCH', `/api/medical-events/${given.id}`, { nextDueDate: day(-11) }),
    [{ path: '/body/nextDueDate', message: 'must not be before date' }], 'PATCH of the due date alone, before the kept date')
  const [stored] = await app.sql`select * from medical_events where id = ${given.id}`
  t.match(stored, { type: 'vaccine', dose_number: 1, lot_number: 'L1', next_due_date: day(30), version: 1 }, 'the record is unchanged')
  t.equal((await app.sql`select count(*)::int as n from changes`)[0].n, changesBefore, 'and no change was recorded')

  const switched = await call(app, ada, 'PATCH', `/api/medical-events/${given.id}`, { type: 'procedure', doseNumber: null, lotNumber: null, nextDueDate: null })
  t.equal(switched.statusCode, 200, 'a vaccine becomes a procedure once its dose fields are cleared')

  // The database holds the same rules, whoever writes.
  const [child] = await app.sql`select id from children where id = ${kim}`
  for (const [what, columns] of [
    ['a procedure with a dose number', { type: 'procedure', dose_number: 1 }],
    ['a medication with a lot', { type: 'medication', lot_number: 'L' }],
    ['a procedure with a site', { type: 'procedure', site: 'Arm' }],
    ['a procedure with a due date', { type: 'procedure', next_due_date: day(5) }],
    ['a due date before the dose', { type: 'vaccine', next_due_date: day(-30) }],
    ['dose 21', { type: 'vaccine', dose_number: 21 }],
    ['a lot of 101 characters', { type: 'vaccine', lot_number: 'L'.repeat(101) }],
    ['an empty site', { type: 'vaccine', site: ' ' }]
  ] as const) {
    const row = { child_id: child.id, date: day(-10), name: 'Direct', ...columns }
    await t.rejects(app.sql`insert into medical_events ${app.sql(row as Record<string, unknown>)}`, { code: '23514' }, `the database refuses ${what}`)
  }
})

t.test('the due list: the latest dose of each vaccine, overdue ones first, by due date, then name', async t => {
  const app = await build(t, { env: OPEN })
  const ada = await register(app)
  const kim = await addChild(app, ada, 'Kim')
  const sibling = await addChild(app, ada, 'Sam')

  const mmr1 = await dose(app, ada, kim, { date: day(-400), name: 'MMR', doseNumber: 1, nextDueDate: day(-100) })
  const mmr2 = await dose(app, ada, kim, { date: day(-50), name: 'mmr', doseNumber: 2, nextDueDate: day(-10) })
  const dtap3 = await dose(app, ada, kim, { date: day(-200), name: 'DTaP', doseNumber: 3, nextDueDate: day(-60) })
  // Created later but given earlier: not the latest dose.
  await dose(app, ada, kim, { date: day(-300), name: 'DTAP', doseNumber: 2, nextDueDate: day(1) })
  const flu = await dose(app, ada, kim, { date: day(-30), name: 'Flu', nextDueDate: day(0) })
  const polio = await dose(app, ada, kim, { date: day(-20), name: 'Polio', doseNumber: 1, nextDueDate: day(40) })
  const hepB = await dose(app, ada, kim, { date: day(-20), name: 'Hep B', doseNumber: 1, nextDueDate: day(40) })
  // The latest dose has no due date: the vaccine is done.
  await dose(app, ada, kim, { date: day(-100), name: 'Rotavirus', doseNumber: 1, nextDueDate: day(5) })
  await dose(app, ada, kim, { date: day(-10), name: 'rotavirus', doseNumber: 2 })
  // Two doses the same day: the one created last counts.
  await dose(app, ada, kim, { date: day(-5), name: 'Varicella', doseNumber: 1, nextDueDate: day(100) })
  const varicella = await dose(app, ada, kim, { date: day(-5), name: 'Varicella', doseNumber: 2, nextDueDate: day(200) })
  // Not vaccines, and not Kim's.
  await call(app, ada, 'POST', `/api/children/${kim}/medical-events`, { date: day(-1), type: 'procedure', name: 'Polio' })
  await dose(app, ada, sibling, { date: day(-10), name: 'Measles', nextDueDate: day(-5) })

  const res = await call(app, ada, 'GET', `/api/children/${kim}/due`)
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.same(body.meta, { total: 6, limit: 50, offset: 0 })
  t.same(body.data, [
    fromNextDue({ name: 'DTaP', dueDate: day(-60), overdue: true, daysUntilDue: -60, lastDose: { id: dtap3.id, date: day(-200), doseNumber: 3 } }),
    fromNextDue({ name: 'mmr', dueDate: day(-10), overdue: true, daysUntilDue: -10, lastDose: { id: mmr2.id, date: day(-50), doseNumber: 2 } }),
    fromNextDue({ name: 'Flu', dueDate: day(0), overdue: false, daysUntilDue: 0, lastDose: { id: flu.id, date: day(-30), doseNumber: null } }),
    fromNextDue({ name: 'Hep B', dueDate: day(40), overdue: false, daysUntilDue: 40, lastDose: { id: hepB.id, date: day(-20), doseNumber: 1 } }),
    fromNextDue({ name: 'Polio', dueDate: day(40), overdue: false, daysUntilDue: 40, lastDose: { id: polio.id, date: day(-20), doseNumber: 1 } }),
    fromNextDue({ name: 'Varicella', dueDate: day(200), overdue: false, daysUntilDue: 200, lastDose: { id: varicella.id, date: day(-5), doseNumber: 2 } })
  ])
  t.notOk(body.data.some((item: any) => item.lastDose.id === mmr1.id), 'an earlier dose never counts')

  const page = (await call(app, ada, 'GET', `/api/children/${kim}/due?limit=2&offset=1`)).json()
  t.same(page.data.map((item: any) => item.name), ['mmr', 'Flu'], 'a page')
  t.same(page.meta, { total: 6, limit: 2, offset: 1 })
  t.same((await call(app, ada, 'GET', `/api/children/${kim}/due?offset=10`)).json(), { data: [], meta: { total: 6, limit: 50, offset: 10 } }, 'past the end: the total still')
  for (const query of ['limit=0', 'limit=1001', 'offset=-1', 'limit=abc']) {
    const bad = await call(app, ada, 'GET', `/api/children/${kim}/due?${query}`)
    t.equal(bad.statusCode, 400, `${query}: 400`)
  }
  t.same((await call(app, ada, 'GET', `/api/children/${sibling}/due`)).json().data.map((item: any) => item.name), ['Measles'], 'each child its own')

  const done = await call(app, ada, 'PATCH', `/api/medical-events/${varicella.id}`, { nextDueDate: null })
  t.equal(done.statusCode, 200)
  t.notOk((await call(app, ada, 'GET', `/api/children/${kim}/due`)).json().data.some((item: any) => item.name === 'Varicella'), 'clearing the due date of the latest dose takes the vaccine off')
})

t.test('the due list is read by any member of the family, viewers too, and by nobody else', async t => {
  const app = await build(t, { env: OPEN })
  const ada = await register(app)
  const kim = await addChild(app, ada, 'Kim')
  await dose(app, ada, kim, { date: day(-10), name: 'MMR', nextDueDate: day(10) })
  const viewer = await register(app)
  await join(app, ada, familyOf(ada), viewer, 'viewer')
  const stranger = await register(app)

  const seen = await call(app, viewer, 'GET', `/api/children/${kim}/due`)
  t.equal(seen.statusCode, 200, 'a viewer reads it')
  t.equal(seen.json().data[0].name, 'MMR')
  const refused = await call(app, stranger, 'GET', `/api/children/${kim}/due`)
  t.equal(refused.statusCode, 403, 'another family: 403')
  t.same(refused.json(), { error: 'Access denied', code: 'FORBIDDEN', details: {} })
  t.notOk(refused.body.includes('MMR'))
  t.equal((await call(app, ada, 'GET', '/api/children/999999/due')).statusCode, 404, 'no such child: 404')
  t.equal((await call(app, ada, 'GET', '/api/children/0/due')).statusCode, 400, 'not an id: 400')
  t.equal((await app.inject({ method: 'GET', url: `/api/children/${kim}/due` })).statusCode, 401, 'no token: 401')
})

t.test('the due list has an ETag: 304 while current, a new one after a dose, and another the next day', async t => {
  const app = await build(t, { env: OPEN })
  const ada = await register(app)
  const kim = await addChild(app, ada, 'Kim')
  const url = `/api/children/${kim}/due`
  const first = await dose(app, ada, kim, { date: day(-10), name: 'MMR', doseNumber: 1, nextDueDate: day(10) })

  const res = await call(app, ada, 'GET', url)
  const etag = res.headers.etag as string
  t.match(etag, /^"[^"]+"$/, 'a strong ETag')
  const again = await call(app, ada, 'GET', url, undefined, { 'if-none-match': etag })
  t.equal(again.statusCode, 304, '304 while nothing changed')
  t.equal(again.body, '')
  t.equal(again.headers.etag, etag)
  const other = await register(app)
  t.equal((await call(app, other, 'GET', url, undefined, { 'if-none-match': etag })).statusCode, 403, 'the scope is decided before the 304')

  await dose(app, ada, kim, { date: day(-1), name: 'MMR', doseNumber: 2, nextDueDate: day(60) })
  const after = await call(app, ada, 'GET', url, undefined, { 'if-none-match': etag })
  t.equal(after.statusCode, 200, 'a new dose: 200')
  t.not(after.headers.etag, etag, 'with a new ETag')
  t.same(after.json().data.map((item: any) => [item.dueDate, item.lastDose.doseNumber]), [[day(60), 2]], 'and the new due date')

  const patched = await call(app, ada, 'PATCH', `/api/medical-events/${first.id}`, { lotNumber: 'L-9' })
  t.equal(patched.statusCode, 200)
  const current = await call(app, ada, 'GET', url, undefined, { 'if-none-match': after.headers.etag as string })
  t.equal(current.statusCode, 200, 'any change of the child moves the ETag')

  // Tomorrow the same data counts one day less: yesterday's ETag no longer holds.
  const today = current.json()
  const realNow = Date.now
  const tomorrow = realNow() + 86400000
  Date.now = () => realNow() + 86400000
  t.teardown(() => { Date.now = realNow })
  const fresh = await login(app, ada.user.email)
  const next = await call(app, fresh, 'GET', url, undefined, { 'if-none-match': current.headers.etag as string })
  Date.now = realNow
  t.equal(next.statusCode, 200, 'the next day: 200, not 304')
  t.not(next.headers.etag, current.headers.etag, 'another ETag')
  t.equal(next.json().data[0].daysUntilDue, today.data[0].daysUntilDue - 1, 'one day less to go')
  t.equal(next.json().data[0].dueDate, day(60), 'the same due date')
  t.equal(day(0, tomorrow), day(1))
})

t.test('the calendar feed shows each due date as an all-day event of its own', async t => {
  const app = await build(t, { env: OPEN })
  const ada = await register(app)
  const kim = await addChild(app, ada, 'Kim')
  const visit = (await call(app, ada, 'POST', `/api/children/${kim}/visits`, { date: day(-3), type: 'wellness' })).json()
  const mmr = await dose(app, ada, kim, { date: day(-3), name: 'MMR', doseNumber: 1, lotNumber: 'L1', nextDueDate: day(30), visitId: visit.id })
  const flu = await dose(app, ada, kim, { date: day(-20), name: 'Flu', nextDueDate: day(-2) })
  await dose(app, ada, kim, { date: day(-400), name: 'Polio', doseNumber: 1, nextDueDate: day(-380) })
  await dose(app, ada, kim, { date: day(-100), name: 'Hep B', doseNumber: 1, nextDueDate: day(10) })
  await dose(app, ada, kim, { date: day(-2), name: 'Hep B', doseNumber: 2 })
  const bo = await register(app)
  const other = await addChild(app, bo, 'Other')
  await dose(app, bo, other, { date: day(-3), name: 'Other-family-vaccine', nextDueDate: day(3) })

  const feed = (await call(app, ada, 'POST', '/api/me/calendar-feeds', { familyId: familyOf(ada) })).json()
  const read = async () => {
    const res = await app.inject({ method: 'GET', url: feed.url })
    t.equal(res.statusCode, 200)
    t.notOk(res.body.includes('Other-family-vaccine'), 'nothing of another family')
    return new ICAL.Component(ICAL.parse(res.body)).getAllSubcomponents('vevent')
  }
  const events = await read()
  t.same(events.map((event: any) => event.getFirstPropertyValue('uid')), [
    `visit-${visit.id}@child-health`,
    `due-medical-event-${flu.id}@child-health`,
    `due-medical-event-${mmr.id}@child-health`
  ], 'by date: the due dates within the feed\'s range, Hep B done, Polio due more than 12 months ago left out')

  const [, fluEvent, mmrEvent] = events
  t.equal(mmrEvent.getFirstPropertyValue('summary'), 'Kim: MMR due (dose 2)')
  t.equal(fluEvent.getFirstPropertyValue('summary'), 'Kim: Flu due', 'no dose number, no dose in the summary')
  t.equal(mmrEvent.getFirstPropertyValue('description'), `Dose 1 given on ${day(-3)}`)
  t.equal(fluEvent.getFirstPropertyValue('description'), `Last dose given on ${day(-20)}`)
  const start: any = mmrEvent.getFirstProperty('dtstart')
  t.equal(start.type, 'date', 'an all-day event')
  t.equal(start.getFirstValue().toString(), day(30))
  t.equal(mmrEvent.getFirstPropertyValue('dtend')?.toString(), day(31), 'ending the next day')
  t.equal(mmrEvent.getFirstPropertyValue('sequence'), 1)

  await call(app, ada, 'PATCH', `/api/medical-events/${mmr.id}`, { nextDueDate: day(45) })
  const moved: any = (await read()).find((event: any) => event.getFirstPropertyValue('uid') === `due-medical-event-${mmr.id}@child-health`)
  t.equal(moved.getFirstProperty('dtstart').getFirstValue().toString(), day(45), 'the same UID moves to the new day')
  t.equal(moved.getFirstPropertyValue('sequence'), 2, 'with the dose\'s version as SEQUENCE')

  const second = await dose(app, ada, kim, { date: day(-1), name: 'MMR', doseNumber: 2, nextDueDate: day(200) })
  const uids = (await read()).map((event: any) => event.getFirstPropertyValue('uid'))
  t.notOk(uids.includes(`due-medical-event-${mmr.id}@child-health`), 'a new dose takes the old due date off')
  t.ok(uids.includes(`due-medical-event-${second.id}@child-health`), 'and puts its own on')
})

t.test('the exports carry a dose: JSON as the routes answer it, FHIR as an Immunization that validates', async t => {
  const app = await build(t, { env: OPEN })
  const ada = await register(app)
  const kim = await addChild(app, ada, 'Kim')
  const given = await dose(app, ada, kim, { date: day(-3), name: 'MMR', doseNumber: 2, lotNumber: 'AB-12', site: 'Left thigh', nextDueDate: day(30) })
  const bare = await dose(app, ada, kim, { date: day(-4), name: 'Flu' })

  const json = await call(app, ada, 'GET', `/api/children/${kim}/export?format=json`)
  t.equal(json.statusCode, 200)
  t.same(json.json().medicalEvents.find((event: any) => event.id === given.id), given, 'the JSON export answers the dose as the route does')

  const fhir = await call(app, ada, 'GET', `/api/children/${kim}/export?format=fhir`)
  t.equal(fhir.statusCode, 200)
  const bundle = fhir.json()
  t.same(issuesOf(bundle), [], 'the bundle validates')
  const immunizations = bundle.entry.map((entry: any) => entry.resource).filter((resource: any) => resource.resourceType === 'Immunization')
  const withDose = immunizations.find((resource: any) => resource.vaccineCode.text === 'MMR')
  t.same(withDose.protocolApplied, [{ doseNumberPositiveInt: 2 }])
  t.equal(withDose.lotNumber, 'AB-12')
  t.same(withDose.site, { text: 'Left thigh' })
  t.same(issuesOf(withDose), [], 'the Immunization validates')
  const without = immunizations.find((resource: any) => resource.vaccineCode.text === 'Flu')
  t.notOk('protocolApplied' in without || 'lotNumber' in without || 'site' in without, `none of them without a dose (${bare.id})`)
})
