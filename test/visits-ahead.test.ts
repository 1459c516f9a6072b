import t, { type Test } from 'tap'
import { build, call, familyOf, register, type Pair } from './helper'
import { exported, importArchive, rebuilt, type App } from './import-helpers'

const OPEN = { REGISTRATION: 'open' }
const BIRTH = '2022-03-15'
const DAY_MS = 86400000

/** A date this many days after today in UTC, as the service counts its days. */
function daysAhead (days: number): string {
  return new Date(Date.now() + days * DAY_MS).toISOString().slice(0, 10)
}

// Records may be a day ahead of today in UTC (time zones east of the server);
// a visit may be 730 days ahead of that day.
const TOMORROW = 1
const LATEST_VISIT = TOMORROW + 730

async function setup (t: Test): Promise<{ app: App, owner: Pair, child: number, url: string }> {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const res = await call(app, owner, 'POST', '/api/children', { name: 'Kim', dateOfBirth: BIRTH, sex: 'female' })
  t.equal(res.statusCode, 201)
  const child = res.json().id as number
  return { app, owner, child, url: `/api/children/${child}` }
}

async function addVisit (t: Test, app: App, owner: Pair, child: number, date: string): Promise<number> {
  const res = await call(app, owner, 'POST', `/api/children/${child}/visits`, { date, type: 'wellness' })
  t.equal(res.statusCode, 201, `a visit on ${date}: ${res.body}`)
  return res.json().id
}

async function count (app: App, table: string, child: number): Promise<number> {
  const [{ n }] = await app.sql`select count(*)::integer as n from ${app.sql(table)} where child_id = ${child}`
  return n
}

t.test('a visit may lie up to 730 days ahead, on POST, PUT, PATCH and in a batch; a day more is a 400', async t => {
  const { app, owner, child, url } = await setup(t)
  const TOO_FAR = [{ path: '/body/date', message: 'must not be more than 730 days ahead' }]
  for (const days of [2, 30, 730, LATEST_VISIT]) {
    const res = await call(app, owner, 'POST', `${url}/visits`, { date: daysAhead(days), type: 'wellness' })
    t.equal(res.statusCode, 201, `${days} days ahead`)
    t.equal(res.json().date, daysAhead(days), 'the date sent is the date answered')
  }
  const far = await call(app, owner, 'POST', '/api/visits', { childId: child, date: daysAhead(LATEST_VISIT + 1), type: 'dental' })
  t.equal(far.statusCode, 400, 'a day past the limit')
  t.equal(far.json().code, 'VALIDATION_ERROR')
  t.same(far.json().details.issues, TOO_FAR)

  const visit = await addVisit(t, app, owner, child, daysAhead(10))
  const put = await call(app, owner, 'PUT', `/api/visits/${visit}`, { date: daysAhead(LATEST_VISIT + 1), type: 'wellness' })
  t.equal(put.statusCode, 400, 'on PUT')
  t.same(put.json().details.issues, TOO_FAR)
  const patch = await call(app, owner, 'PATCH', `/api/visits/${visit}`, { date: daysAhead(LATEST_VISIT + 1) })
  t.equal(patch.statusCode, 400, 'on PATCH')
  t.same(patch.json().details.issues, TOO_FAR)
  const moved = await call(app, owner, 'PATCH', `/api/visits/${visit}`, { date: daysAhead(LATEST_VISIT) })
  t.equal(moved.statusCode, 200, 'moved to the latest day')

  const batch = await call(app, owner, 'POST', `/api/families/${familyOf(owner)}/batch`, {
    atomic: false,
    operations: [
      { method: 'POST', path: `${url}/visits`, body: { date: daysAhead(LATEST_VISIT), type: 'vision' } },
      { method: 'POST', path: `${url}/visits`, body: { date: daysAhead(LATEST_VISIT + 1), type: 'vision' } }
    ]
  })
  t.equal(batch.statusCode, 200)
  t.same(batch.json().results.map((result: any) => result.status), [201, 400], 'a batch applies the same rule')
  t.equal(await count(app, 'visits', child), 6, 'refused visits wrote nothing')

  // Other records still may not be in the future.
  const measured = await call(app, owner, 'POST', `${url}/measurements`, { measuredAt: daysAhead(2), weightKg: 9 })
  t.equal(measured.statusCode, 400)
  t.same(measured.json().details.issues, [{ path: '/body/measuredAt', message: 'must not be in the future' }])
})

t.test('a visit after today takes no measurement', async t => {
  const { app, owner, child, url } = await setup(t)
  const ahead = await call(app, owner, 'POST', `${url}/visits`, { date: daysAhead(5), type: 'wellness', measurement: { weightKg: 12.5 } })
  t.equal(ahead.statusCode, 400)
  t.same(ahead.json().details.issues, [{ path: '/body/measurement', message: 'must not be given with a visit after today' }])
  const flat = await call(app, owner, 'POST', '/api/visits', { childId: child, date: daysAhead(300), type: 'wellness', measurement: { heightCm: 90 } })
  t.equal(flat.statusCode, 400, 'on the flat route too')
  t.equal(await count(app, 'visits', child), 0, 'no visit was written')
  t.equal(await count(app, 'measurements', child), 0, 'no measurement was written')

  const today = await call(app, owner, 'POST', `${url}/visits`, { date: daysAhead(0), type: 'wellness', measurement: { weightKg: 12.5 } })
  t.equal(today.statusCode, 201, 'a visit today takes its measurement')
  t.equal(today.json().measurement.measuredAt, daysAhead(0))
  const empty = await call(app, owner, 'POST', `${url}/visits`, { date: daysAhead(5), type: 'wellness', measurement: null })
  t.equal(empty.statusCode, 201, 'a visit ahead with a null measurement is a visit without one')
})

t.test('no record links to a visit dated after its own date: measurements, medical events, illnesses, on POST, PUT and PATCH', async t => {
  const { app, owner, child, url } = await setup(t)
  const ahead = await addVisit(t, app, owner, child, daysAhead(20))
  const past = await addVisit(t, app, owner, child, '2023-05-10')
  const kinds = [
    { path: 'measurements', field: 'measuredAt', body: { measuredAt: '2023-05-01', weightKg: 9 } },
    { path: 'medical-events', field: 'date', body: { date: '2023-05-01', type: 'medication', name: 'Paracetamol' } },
    { path: 'illnesses', field: 'endDate', body: { startDate: '2023-04-20', endDate: '2023-05-01' } }
  ]
  for (const kind of kinds) {
    const before = await call(app, owner, 'POST', `${url}/${kind.path}`, { ...kind.body, visitId: past })
    t.equal(before.statusCode, 400, `${kind.path}: dated before its visit`)
    t.same(before.json().details.issues, [{ path: '/body/visitId', message: `must be a visit on or before ${kind.field} (the visit is on 2023-05-10)` }])
    const future = await call(app, owner, 'POST', `/api/${kind.path}`, { childId: child, ...kind.body, [kind.field]: daysAhead(0), visitId: ahead })
    t.equal(future.statusCode, 400, `${kind.path}: linked to a visit ahead`)
    t.same(future.json().details.issues, [{ path: '/body/visitId', message: `must be a visit on or before ${kind.field} (the visit is on ${daysAhead(20)})` }])

    const sameDay = await call(app, owner, 'POST', `${url}/${kind.path}`, { ...kind.body, [kind.field]: '2023-05-10', visitId: past })
    t.equal(sameDay.statusCode, 201, `${kind.path}: on the visit's day`)
    const record = sameDay.json()
    const earlier = await call(app, owner, 'PATCH', `/api/${kind.path}/${record.id}`, { [kind.field]: '2023-05-09' })
    t.equal(earlier.statusCode, 400, `${kind.path}: PATCH moving the record before its visit`)
    t.same(earlier.json().details.issues.map((issue: any) => issue.path), ['/body/visitId'])
    const relink = await call(app, owner, 'PATCH', `/api/${kind.path}/${record.id}`, { visitId: ahead })
    t.equal(relink.statusCode, 400, `${kind.path}: PATCH linking a visit ahead`)
    const put = await call(app, owner, 'PUT', `/api/${kind.path}/${record.id}`, { ...kind.body, [kind.field]: '2023-05-10', visitId: ahead })
    t.equal(put.statusCode, 400, `${kind.path}: PUT linking a visit ahead`)
    const kept = (await call(app, owner, 'GET', `/api/${kind.path}/${record.id}`)).json()
    t.equal(kept.visitId, past, `${kind.path}: the refused writes changed nothing`)
    t.equal(kept.version, 1)
  }
  t.equal(await count(app, 'measurements', child), 1)
  t.equal(await count(app, 'medical_events', child), 1)
  t.equal(await count(app, 'illnesses', child), 1)
})

t.test('an illness reaches a visit during it: up to its end, or up to today while it goes on', async t => {
  const { app, owner, child, url } = await setup(t)
  const during = await addVisit(t, app, owner, child, '2023-05-03')
  const ahead = await addVisit(t, app, owner, child, daysAhead(3))
  const flu = await call(app, owner, 'POST', `${url}/illnesses`, { startDate: '2023-05-01', endDate: '2023-05-08', visitId: during })
  t.equal(flu.statusCode, 201, 'a visit two days into the illness')
  const current = await call(app, owner, 'POST', `${url}/illnesses`, { startDate: daysAhead(-3), visitId: during })
  t.equal(current.statusCode, 201, 'a current illness, a visit before it')
  const later = await call(app, owner, 'POST', `${url}/illnesses`, { startDate: daysAhead(-3), visitId: ahead })
  t.equal(later.statusCode, 400, 'a current illness and an appointment ahead')
  t.same(later.json().details.issues, [{ path: '/body/visitId', message: `must be a visit on or before today while endDate is not set (the visit is on ${daysAhead(3)})` }])
})

t.test('a visit\'s date may not move past the date of a record linked to it; records keep their dates', async t => {
  const { app, owner, child, url } = await setup(t)
  const visit = await addVisit(t, app, owner, child, '2023-05-10')
  const measurement = (await call(app, owner, 'POST', `${url}/measurements`, { measuredAt: '2023-05-12', weightKg: 9, visitId: visit })).json()
  const event = (await call(app, owner, 'POST', `${url}/medical-events`, { date: '2023-05-20', type: 'vaccine', name: 'MMR', visitId: visit })).json()
  const illness = (await call(app, owner, 'POST', `${url}/illnesses`, { startDate: '2023-05-01', visitId: visit })).json()
  t.ok(measurement.id > 0 && event.id > 0 && illness.id > 0, 'three records linked')

  const patch = await call(app, owner, 'PATCH', `/api/visits/${visit}`, { date: '2023-05-13' })
  t.equal(patch.statusCode, 400, 'past the measurement')
  t.same(patch.json().details.issues, [{ path: '/body/date', message: `must not be after the date of a record linked to it (measurement ${measurement.id} on 2023-05-12)` }])
  const put = await call(app, owner, 'PUT', `/api/visits/${visit}`, { date: daysAhead(100), type: 'wellness' })
  t.equal(put.statusCode, 400, 'a PUT into the future')
  t.equal(put.json().details.issues[0].path, '/body/date')
  t.equal((await call(app, owner, 'GET', `/api/visits/${visit}`)).json().date, '2023-05-10', 'the visit kept its date')

  t.equal((await call(app, owner, 'PATCH', `/api/visits/${visit}`, { date: '2023-05-12' })).statusCode, 200, 'on the day of the earliest linked record')
  t.equal((await call(app, owner, 'PATCH', `/api/visits/${visit}`, { date: '2023-04-01' })).statusCode, 200, 'earlier: nothing else moves')
  t.equal((await call(app, owner, 'GET', `/api/measurements/${measurement.id}`)).json().measuredAt, '2023-05-12')

  // Once the measurement and the event are unlinked, only the current illness holds the visit: up to today.
  t.equal((await call(app, owner, 'PATCH', `/api/measurements/${measurement.id}`, { visitId: null })).statusCode, 200)
  t.equal((await call(app, owner, 'PATCH', `/api/medical-events/${event.id}`, { visitId: null })).statusCode, 200)
  t.equal((await call(app, owner, 'PATCH', `/api/visits/${visit}`, { date: daysAhead(0) })).statusCode, 200, 'today, while the illness goes on')
  const ahead = await call(app, owner, 'PATCH', `/api/visits/${visit}`, { date: daysAhead(5) })
  t.equal(ahead.statusCode, 400, 'not ahead of the current illness')
  t.same(ahead.json().details.issues, [{ path: '/body/date', message: `must not be after the date of a record linked to it (illness ${illness.id} on ${daysAhead(TOMORROW)})` }])
  t.equal((await call(app, owner, 'PATCH', `/api/illnesses/${illness.id}`, { visitId: null })).statusCode, 200)
  t.equal((await call(app, owner, 'PATCH', `/api/visits/${visit}`, { date: daysAhead(5) })).statusCode, 200, 'with nothing linked, an appointment ahead')
})

t.test('a vaccine naming its series (checked apart from the insert) follows the same link rule', async t => {
  const { app, owner, child, url } = await setup(t)
  t.equal((await call(app, owner, 'PATCH', url, { scheduleId: 'us-routine' })).statusCode, 200)
  const ahead = await addVisit(t, app, owner, child, daysAhead(40))
  const res = await call(app, owner, 'POST', `${url}/medical-events`, { date: BIRTH, type: 'vaccine', name: 'Hepatitis B', vaccine: 'HepB', doseNumber: 1, visitId: ahead })
  t.equal(res.statusCode, 400)
  t.same(res.json().details.issues, [{ path: '/body/visitId', message: `must be a visit on or before date (the visit is on ${daysAhead(40)})` }])
  t.equal(await count(app, 'medical_events', child), 0)
})

t.test('the due list holds vaccine doses only: visits ahead are not listed', async t => {
  const { app, owner, child, url } = await setup(t)
  await addVisit(t, app, owner, child, daysAhead(2))
  await addVisit(t, app, owner, child, daysAhead(300))
  const due = await call(app, owner, 'GET', `${url}/due`)
  t.equal(due.statusCode, 200)
  t.same(due.json().data, [], 'nothing due for a child without vaccines or schedule')
})

t.test('an archive with visits ahead imports; one with a record linked to a later visit is refused', async t => {
  const { app, owner, child, url } = await setup(t)
  const visit = await addVisit(t, app, owner, child, daysAhead(LATEST_VISIT))
  const past = await addVisit(t, app, owner, child, '2023-05-10')
  t.equal((await call(app, owner, 'POST', `${url}/measurements`, { measuredAt: '2023-06-01', weightKg: 10, visitId: past })).statusCode, 201)
  const archive = await exported(app, owner, familyOf(owner))

  const imported = await importArchive(app, owner, archive)
  t.equal(imported.statusCode, 201, imported.body)
  t.equal(imported.json().counts.visits, 2)
  const [{ date }] = await app.sql`select date from visits where id <> ${visit} and id <> ${past} and date > current_date`
  t.equal(date, daysAhead(LATEST_VISIT), 'the visit ahead came along')

  const broken = await rebuilt(archive, (_found, _manifest, family) => { family.children[0].measurements[0].measuredAt = '2023-05-01' })
  const refused = await importArchive(app, owner, broken)
  t.equal(refused.statusCode, 400)
  t.equal(refused.json().code, 'INVALID_ARCHIVE')
  t.match(refused.json().error, /children\[0\]\.measurements\[0\]: visitId names a visit after its measuredAt/)
})
