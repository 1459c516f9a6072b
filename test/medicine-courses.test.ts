import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import path from 'node:path'
import type { AddressInfo } from 'node:net'
import { resourceId } from '../lib/fhir'
import { allowedMedicineDoses } from '../sql/medicine-courses'
import { issuesOf } from './fhir-validate'
import { bearer, build, call, changesSince, familyOf, got as get, household, made, refusesEach, register, tempDir, testDatabase, TEST_ENV, type Refusal } from './helper'
import { importArchive, unzip } from './import-helpers'

const OPEN = { REGISTRATION: 'open' }
type Json = any

const COURSE = { name: 'Paracetamol 120 mg/5 ml', doseAmount: 5, doseUnit: 'ml', minIntervalHours: 4, maxDosesPer24h: 3, startDate: '2024-03-01', endDate: '2024-03-05' }

/** An owner, a viewer and a stranger; a child born 2024-01-01 with a course of 5 ml at least 4 h apart, at most 3 in 24 h. */
async function setup (t: Test) {
  const app = await build(t, { env: OPEN })
  const { owner, familyId, viewer, stranger } = await household(app, { viewer: 'viewer', stranger: null })
  const child = await made(app, owner, '/api/children', { name: 'Kim Lee', dateOfBirth: '2024-01-01', sex: 'female' })
  const course = await made(app, owner, `/api/children/${child.id}/medicine-courses`, COURSE)
  return { app, owner, familyId, viewer, stranger, child, course, doses: `/api/medicine-courses/${course.id}/doses` }
}

const at = (hours: number): string => new Date(Date.parse('2024-03-01T00:00:00Z') + hours * 3600000).toISOString()

t.test('a course and its doses through their whole life: create, list, read, replace, change, delete, history', async t => {
  const { app, owner, child, course, doses } = await setup(t)
  t.same(course, {
    id: course.id, childId: child.id, ...COURSE, remind: false, nextDoseAllowedAt: null, version: 1, createdAt: course.createdAt, updatedAt: course.updatedAt
  }, 'the course as sent, remind false, no next dose without doses')
  const flat = await call(app, owner, 'POST', '/api/medicine-courses', { childId: child.id, name: 'Amoxicillin', doseAmount: 0.125, doseUnit: 'g', minIntervalHours: 0.5, startDate: '2024-02-01', remind: true })
  t.equal(flat.statusCode, 201, flat.body)
  t.equal(flat.headers.location, `/api/medicine-courses/${flat.json().id}`)
  t.match(flat.json(), { maxDosesPer24h: null, endDate: null, remind: true, doseAmount: 0.125, minIntervalHours: 0.5 })
  const list = await get(app, owner, `/api/children/${child.id}/medicine-courses`)
  t.same(list.data.map((item: Json) => item.id), [course.id, flat.json().id], 'newest first by startDate')
  t.same(list.data[0], course, 'a listed course is its GET, the same JSON')
  t.same((await get(app, owner, `/api/medicine-courses?childId=${child.id}&sort=name`)).data.map((item: Json) => item.name), ['Amoxicillin', COURSE.name])
  t.same((await get(app, owner, `/api/medicine-courses?childId=${child.id}&from=2024-02-15`)).data.map((item: Json) => item.id), [course.id], 'from bounds startDate')

  const res = await call(app, owner, 'POST', doses, { givenAt: '2024-03-01T09:30:00+02:00', amount: 4.5 })
  t.equal(res.statusCode, 201, res.body)
  const dose = res.json()
  t.equal(res.headers.location, `/api/medicine-doses/${dose.id}`)
  t.same(dose, { id: dose.id, childId: child.id, courseId: course.id, givenAt: '2024-03-01T07:30:00.000Z', amount: 4.5, early: false, version: 1, createdAt: dose.createdAt, updatedAt: dose.updatedAt }, 'its time in UTC')
  const second = await made(app, owner, doses, { givenAt: at(12) })
  t.equal(second.amount, null, 'no amount: the course\'s dose')
  const listed = await get(app, owner, doses)
  t.same(listed.data, [dose, second], 'oldest first, as their GETs answer')
  t.same(listed.meta, { total: 2, limit: 50, offset: 0 })
  t.same((await get(app, owner, `${doses}?sort=-givenAt`)).data.map((item: Json) => item.id), [second.id, dose.id])
  t.same((await get(app, owner, `/api/medicine-doses/${dose.id}`)), dose)
  t.equal((await call(app, owner, 'GET', `/api/medicine-doses/${dose.id}`)).headers.etag, '"1"')
  const readCourse = await call(app, owner, 'GET', `/api/medicine-courses/${course.id}`)
  t.match(readCourse.json(), { nextDoseAllowedAt: at(16), version: 3 }, 'each dose moved the course on')
  t.equal(readCourse.headers.etag, '"3"')
  t.same((await get(app, owner, `/api/children/${child.id}/medicine-courses`)).data[0], readCourse.json(), 'the list, written by the database, answers the course as its GET')

  const replaced = await call(app, owner, 'PUT', `/api/medicine-doses/${dose.id}`, { givenAt: at(8) })
  t.equal(replaced.statusCode, 200, replaced.body)
  t.match(replaced.json(), { givenAt: at(8), amount: null, version: 2, courseId: course.id }, 'PUT replaces: the amount becomes null')
  const patched = await call(app, owner, 'PATCH', `/api/medicine-doses/${dose.id}`, { amount: 5.25 })
  t.match(patched.json(), { givenAt: at(8), amount: 5.25, version: 3 })
  t.equal((await get(app, owner, `/api/medicine-courses/${course.id}`)).version, 3, 'a changed amount leaves the course as it was')
  const moved = await call(app, owner, 'PATCH', `/api/medicine-doses/${dose.id}`, { courseId: flat.json().id })
  t.equal(moved.statusCode, 400, 'a dose never moves to another course')

  const put = await call(app, owner, 'PUT', `/api/medicine-courses/${course.id}`, { ...COURSE, name: 'Paracetamol' })
  t.match(put.json(), { name: 'Paracetamol', remind: false, nextDoseAllowedAt: at(16), version: 4 })
  const reminded = await call(app, owner, 'PATCH', `/api/medicine-courses/${course.id}`, { remind: true })
  t.match(reminded.json(), { remind: true, name: 'Paracetamol', version: 5 }, 'PATCH keeps what it does not name')
  t.match((await call(app, owner, 'PUT', `/api/medicine-courses/${course.id}`, COURSE)).json(), { remind: false }, 'a PUT without remind turns it off')
  t.equal((await call(app, owner, 'PATCH', `/api/medicine-courses/${course.id}`, { nextDoseAllowedAt: at(1) })).statusCode, 400, 'the next dose is not written by the course')

  t.equal((await call(app, owner, 'DELETE', `/api/medicine-doses/${dose.id}`)).statusCode, 204)
  t.equal((await call(app, owner, 'GET', `/api/medicine-doses/${dose.id}`)).statusCode, 404)
  const history = (await get(app, owner, `/api/medicine-doses/${dose.id}/history`)).data
  t.same(history.map((entry: Json) => [entry.version, entry.op]), [[3, 'deleted'], [3, 'updated'], [2, 'updated'], [1, 'created']])
  t.same(history[2].fields, { givenAt: { from: '2024-03-01T07:30:00.000Z', to: at(8) }, amount: { from: 4.5, to: null } })
  const courseHistory = (await get(app, owner, `/api/medicine-courses/${course.id}/history`)).data
  t.same(courseHistory.at(-2).fields, { nextDoseAllowedAt: { from: null, to: '2024-03-01T11:30:00.000Z' } }, 'the course\'s history shows its next dose moving')

  t.equal((await call(app, owner, 'DELETE', `/api/medicine-courses/${course.id}`)).statusCode, 204)
  t.equal((await call(app, owner, 'GET', `/api/medicine-doses/${second.id}`)).statusCode, 404, 'its doses go with it')
  t.equal((await call(app, owner, 'GET', doses)).statusCode, 404)
})

t.test('nextDoseAllowedAt: the interval, the 24-hour cap, and an early dose recorded as early', async t => {
  const { app, owner, familyId, course, doses } = await setup(t)
  const courseUrl = `/api/medicine-courses/${course.id}`
  const start = await changesSince(app, owner, familyId, null)
  const d1 = await made(app, owner, doses, { givenAt: at(0) })
  t.equal((await get(app, owner, courseUrl)).nextDoseAllowedAt, at(4), 'one dose: the interval')
  const d2 = await made(app, owner, doses, { givenAt: at(4) })
  t.equal(d2.early, false, 'a dose at the very moment allowed is not early')
  t.equal((await get(app, owner, courseUrl)).nextDoseAllowedAt, at(8), 'two doses: still the interval')
  const d3 = await made(app, owner, doses, { givenAt: at(8) })
  const third = await call(app, owner, 'GET', courseUrl)
  t.equal(third.json().nextDoseAllowedAt, at(24), 'three doses in 24 h: the oldest of them + 24 h, later than the interval')
  const feed = await changesSince(app, owner, familyId, start.next)
  t.same(feed.data.map((change: Json) => [change.kind, change.op, change.id]), [
    ['medicineDose', 'created', d1.id], ['medicineCourse', 'updated', course.id],
    ['medicineDose', 'created', d2.id], ['medicineCourse', 'updated', course.id],
    ['medicineDose', 'created', d3.id], ['medicineCourse', 'updated', course.id]
  ], 'each dose, then its course')
  t.same(feed.data[4].record, d3, 'a dose\'s change carries it as its GET answers')
  t.equal(feed.data[5].record.nextDoseAllowedAt, at(24), 'the course\'s change carries its next dose')

  const early = await call(app, owner, 'POST', doses, { givenAt: '2024-03-01T14:00:00+02:00' })
  t.equal(early.statusCode, 201, 'an early dose is never refused')
  t.match(early.json(), { givenAt: at(12), early: true }, 'it is recorded as early')
  const after = await call(app, owner, 'GET', courseUrl)
  t.match(after.json(), { nextDoseAllowedAt: at(28), version: 5 }, 'the three latest now start at the second dose')
  t.equal((await call(app, owner, 'GET', courseUrl, undefined, { 'if-none-match': third.headers.etag as string })).statusCode, 200, 'the old ETag no longer answers 304')
  t.equal((await call(app, owner, 'GET', courseUrl, undefined, { 'if-none-match': after.headers.etag as string })).statusCode, 304)

  const open = await made(app, owner, `/api/children/${course.childId}/medicine-courses`, { ...COURSE, maxDosesPer24h: null, minIntervalHours: 6 })
  await made(app, owner, `/api/medicine-courses/${open.id}/doses`, { givenAt: at(0) })
  await made(app, owner, `/api/medicine-courses/${open.id}/doses`, { givenAt: at(6) })
  await made(app, owner, `/api/medicine-courses/${open.id}/doses`, { givenAt: at(12) })
  const fourth = await made(app, owner, `/api/medicine-courses/${open.id}/doses`, { givenAt: at(18) })
  t.equal(fourth.early, false, 'without a daily limit only the interval counts')
  t.equal((await get(app, owner, `/api/medicine-courses/${open.id}`)).nextDoseAllowedAt, at(24))
})

t.test('edits and deletions move nextDoseAllowedAt and work the later doses\' early flags out again', async t => {
  const { app, owner, familyId, course, doses } = await setup(t)
  const courseUrl = `/api/medicine-courses/${course.id}`
  const next = async () => (await get(app, owner, courseUrl)).nextDoseAllowedAt
  const early = async (id: number) => (await get(app, owner, `/api/medicine-doses/${id}`)).early
  await made(app, owner, doses, { givenAt: at(0) })
  await made(app, owner, doses, { givenAt: at(4) })
  const d3 = await made(app, owner, doses, { givenAt: at(8) })
  const d4 = await made(app, owner, doses, { givenAt: at(12) })
  t.equal(d4.early, true)

  const mark = await changesSince(app, owner, familyId, null)
  t.equal((await call(app, owner, 'DELETE', `/api/medicine-doses/${d3.id}`)).statusCode, 204)
  t.match(await get(app, owner, `/api/medicine-doses/${d4.id}`), { early: false, version: 2 }, 'with the third dose gone the fourth is no longer early')
  t.equal(await next(), at(24))
  const deleted = await changesSince(app, owner, familyId, mark.next)
  t.same(deleted.data.map((change: Json) => [change.kind, change.op, change.id]), [
    ['medicineDose', 'deleted', d3.id], ['medicineDose', 'updated', d4.id], ['medicineCourse', 'updated', course.id]
  ], 'the deletion, the later dose whose flag changed, and the course whose next dose moved back')
  t.same(deleted.data[1].record.early, false)

  const d5 = await made(app, owner, doses, { givenAt: at(9) })
  t.equal(d5.early, false, 'a dose recorded late, between two others, is worked out from those before it')
  t.equal(await early(d4.id), true, 'and the dose after it becomes early again')
  t.equal(await next(), at(28))

  const moved = await call(app, owner, 'PATCH', `/api/medicine-doses/${d5.id}`, { givenAt: at(13) })
  t.equal(moved.json().early, true, 'a dose moved after others answers its new flag')
  t.equal(await early(d4.id), false, 'and the one it left is worked out again')
  t.equal(await next(), at(28))

  const unlimited = await call(app, owner, 'PATCH', courseUrl, { maxDosesPer24h: null })
  t.equal(unlimited.json().nextDoseAllowedAt, at(17), 'the course answers its new next dose at once when its rule changes')
  t.equal(await early(d5.id), true, 'one hour after the fourth is still too soon')
  const shorter = await call(app, owner, 'PATCH', courseUrl, { minIntervalHours: 0.5 })
  t.equal(shorter.json().nextDoseAllowedAt, '2024-03-01T13:30:00.000Z')
  t.match(await get(app, owner, `/api/medicine-doses/${d5.id}`), { early: false, version: 3 }, 'a shorter interval clears the flag, as a change of the dose')
  const all = (await get(app, owner, doses)).data
  t.same(all.map((dose: Json) => dose.early), [false, false, false, false])
})

t.test('doses written at once see each other: their flags and the course end as if written one by one', async t => {
  const { app, owner, course, doses } = await setup(t)
  const answers = await Promise.all([2, 0, 1, 3].map(hours => call(app, owner, 'POST', doses, { givenAt: at(hours) })))
  t.same(answers.map(res => res.statusCode), [201, 201, 201, 201])
  const list = (await get(app, owner, doses)).data
  t.same(list.map((dose: Json) => [dose.givenAt, dose.early]), [[at(0), false], [at(1), true], [at(2), true], [at(3), true]])
  t.equal((await get(app, owner, `/api/medicine-courses/${course.id}`)).nextDoseAllowedAt, at(25), 'the third latest + 24 h')
})

t.test('bad input is a 400 naming the field, and nothing is written', async t => {
  const { app, owner, child, course, doses } = await setup(t)
  const base = `/api/children/${child.id}/medicine-courses`
  const future = new Date(Date.now() + 3 * 86400000).toISOString()
  const cases: Refusal[] = [
    ['an empty name', { ...COURSE, name: '  ' }, '/body/name'],
    ['a name too long', { ...COURSE, name: 'x'.repeat(201) }, '/body/name'],
    ['a dose of 0', { ...COURSE, doseAmount: 0 }, '/body/doseAmount', /> 0/],
    ['a negative dose', { ...COURSE, doseAmount: -1 }, '/body/doseAmount'],
    ['a dose with 4 decimals', { ...COURSE, doseAmount: 2.1234 }, '/body/doseAmount', /at most 3 decimal/],
    ['a dose as text', { ...COURSE, doseAmount: '5' }, '/body/doseAmount'],
    ['an unknown unit', { ...COURSE, doseUnit: 'spoon' }, '/body/doseUnit', /must be one of mg, mcg/],
    ['no interval', { ...COURSE, minIntervalHours: 0 }, '/body/minIntervalHours'],
    ['an interval over a week', { ...COURSE, minIntervalHours: 168.5 }, '/body/minIntervalHours'],
    ['an interval with 3 decimals', { ...COURSE, minIntervalHours: 0.125 }, '/body/minIntervalHours', /at most 2 decimal/],
    ['no doses a day', { ...COURSE, maxDosesPer24h: 0 }, '/body/maxDosesPer24h'],
    ['25 doses a day', { ...COURSE, maxDosesPer24h: 25 }, '/body/maxDosesPer24h'],
    ['a fraction of a dose a day', { ...COURSE, maxDosesPer24h: 1.5 }, '/body/maxDosesPer24h'],
    ['a start before birth', { ...COURSE, startDate: '2023-12-31', endDate: null }, '/body/startDate', /date of birth/],
    ['a start in the future', { ...COURSE, startDate: future.slice(0, 10), endDate: null }, '/body/startDate', /future/],
    ['an end before the start', { ...COURSE, endDate: '2024-02-29' }, '/body/endDate', /startDate/],
    ['remind as text', { ...COURSE, remind: 'yes' }, '/body/remind'],
    ['no unit', { ...COURSE, doseUnit: undefined }, '/body/doseUnit'],
    ['a derived field', { ...COURSE, nextDoseAllowedAt: at(1) }, '/body/nextDoseAllowedAt']
  ]
  await refusesEach(t, app, owner, base, cases)
  const doseCases: Refusal[] = [
    ['a date only', { givenAt: '2024-03-02' }, '/body/givenAt'],
    ['a time without its zone', { givenAt: '2024-03-02T08:00:00' }, '/body/givenAt'],
    ['before the child was born', { givenAt: '2023-12-31T08:00:00Z' }, '/body/givenAt', /date of birth \(2024-01-01\)/],
    ['more than a day ahead', { givenAt: future }, '/body/givenAt', /more than a day in the future/],
    ['no time', { amount: 5 }, '/body/givenAt'],
    ['an amount of 0', { givenAt: at(1), amount: 0 }, '/body/amount'],
    ['an amount with 4 decimals', { givenAt: at(1), amount: 1.0001 }, '/body/amount'],
    ['a derived flag', { givenAt: at(1), early: false }, '/body/early']
  ]
  await refusesEach(t, app, owner, doses, doseCases, { code: null })
  const counts = await app.sql`select (select count(*)::int from medicine_courses) as courses, (select count(*)::int from medicine_doses) as doses`
  t.same(counts[0], { courses: 1, doses: 0 }, 'nothing was written')

  const edges = await call(app, owner, 'POST', base, { ...COURSE, doseAmount: 0.001, minIntervalHours: 168, maxDosesPer24h: 24, doseUnit: 'IU', endDate: '2099-12-31', remind: null })
  t.equal(edges.statusCode, 201, 'the bounds, an end far ahead, remind null')
  t.equal(edges.json().remind, false)
  t.equal((await call(app, owner, 'POST', doses, { givenAt: '2024-01-01T00:00:00+14:00', amount: 100000 })).statusCode, 201, 'the first moment of the day of birth anywhere')
  t.equal((await call(app, owner, 'PUT', `/api/medicine-courses/${course.id}`, { ...COURSE, endDate: '2024-02-01' })).statusCode, 400, 'the rules hold for a PUT')
  t.equal((await call(app, owner, 'PATCH', `/api/medicine-courses/${course.id}`, { startDate: '2024-03-06' })).statusCode, 400, 'and for a PATCH, on the course as it would become')
  t.equal((await call(app, owner, 'PATCH', `/api/medicine-courses/${course.id}`, { doseAmount: null })).statusCode, 400, 'a required field cannot be cleared')
})

t.test('the family scope: viewers read, strangers are refused, a course lists only its own doses', async t => {
  const { app, owner, viewer, stranger, child, course, doses } = await setup(t)
  const dose = await made(app, owner, doses, { givenAt: at(1) })
  const courseUrl = `/api/medicine-courses/${course.id}`
  const doseUrl = `/api/medicine-doses/${dose.id}`
  for (const url of [doses, doseUrl, `${doseUrl}/history`, courseUrl, `${courseUrl}/history`, `/api/children/${child.id}/medicine-courses`]) {
    t.equal((await call(app, viewer, 'GET', url)).statusCode, 200, `a viewer reads ${url}`)
  }
  const writes = [
    ['POST', `/api/children/${child.id}/medicine-courses`, COURSE], ['POST', '/api/medicine-courses', { ...COURSE, childId: child.id }],
    ['PUT', courseUrl, COURSE], ['PATCH', courseUrl, { remind: true }], ['DELETE', courseUrl, undefined],
    ['POST', doses, { givenAt: at(2) }], ['PUT', doseUrl, { givenAt: at(2) }], ['PATCH', doseUrl, { amount: 1 }], ['DELETE', doseUrl, undefined]
  ] as const
  for (const [method, url, payload] of writes) {
    const res = await call(app, viewer, method, url, payload)
    t.equal(res.statusCode, 403, `a viewer's ${method} ${url}`)
    t.equal(res.json().code, 'FORBIDDEN')
  }
  t.equal((await call(app, viewer, 'POST', doses, { givenAt: 'soon' })).statusCode, 400, 'a viewer\'s malformed write is a 400 first')
  for (const [method, url, payload] of [...writes, ['GET', doses, undefined], ['GET', doseUrl, undefined], ['GET', courseUrl, undefined], ['GET', `${courseUrl}/history`, undefined]] as const) {
    const res = await call(app, stranger, method, url, payload)
    t.equal(res.statusCode, 403, `another family's ${method} ${url}`)
    t.equal(res.json().error, 'Access denied')
  }
  t.equal((await call(app, owner, 'GET', '/api/medicine-courses/999999/doses')).statusCode, 404, 'a course that does not exist')
  t.equal((await call(app, owner, 'POST', '/api/medicine-courses/999999/doses', { givenAt: at(2) })).statusCode, 404)
  t.equal((await call(app, owner, 'GET', '/api/medicine-doses/999999')).statusCode, 404)
  const other = await made(app, owner, `/api/children/${child.id}/medicine-courses`, COURSE)
  t.same((await get(app, owner, `/api/medicine-courses/${other.id}/doses`)).data, [], 'another course lists none of the first one\'s doses')

  const theirChild = await made(app, stranger, '/api/children', { name: 'Other', dateOfBirth: '2023-01-01', sex: 'male', familyId: familyOf(stranger) })
  const theirs = await made(app, stranger, `/api/children/${theirChild.id}/medicine-courses`, COURSE)
  t.equal((await call(app, owner, 'POST', `/api/medicine-courses/${theirs.id}/doses`, { givenAt: at(2) })).statusCode, 403, 'a dose under another family\'s course')
  t.equal((await app.sql`select count(*)::int as n from medicine_doses where course_id = ${theirs.id}`)[0].n, 0)
})

t.test('If-Match: a stale version is a 412 with the current one, and nothing changes', async t => {
  const { app, owner, course, doses } = await setup(t)
  const dose = await made(app, owner, doses, { givenAt: at(1) })
  for (const [url, body, version] of [[`/api/medicine-courses/${course.id}`, COURSE, 2], [`/api/medicine-doses/${dose.id}`, { givenAt: at(1) }, 1]] as const) {
    for (const [method, payload] of [['PUT', body], ['PATCH', {}], ['DELETE', undefined]] as const) {
      const stale = await call(app, owner, method, url, payload, { 'if-match': `"${version + 7}"` })
      t.equal(stale.statusCode, 412, `a stale ${method} ${url}`)
      t.same(stale.json().details, { currentVersion: version })
    }
    const ok = await call(app, owner, 'PATCH', url, {}, { 'if-match': `"${version}"` })
    t.equal(ok.statusCode, 200)
    t.equal(ok.json().version, version, 'an empty PATCH changes nothing')
  }
})

t.test('a child\'s deletion records each course and dose as deleted, and nothing else', async t => {
  const { app, owner, familyId, child, course, doses } = await setup(t)
  const one = await made(app, owner, doses, { givenAt: at(0) })
  const two = await made(app, owner, doses, { givenAt: at(1) })
  const mark = await changesSince(app, owner, familyId, null)
  t.equal((await call(app, owner, 'DELETE', `/api/children/${child.id}`)).statusCode, 204)
  const gone = await changesSince(app, owner, familyId, mark.next)
  const records = gone.data.filter((change: Json) => change.kind.startsWith('medicine'))
  t.same(records.map((change: Json) => [change.kind, change.op, change.id]).sort(), [
    ['medicineCourse', 'deleted', course.id], ['medicineDose', 'deleted', one.id], ['medicineDose', 'deleted', two.id]
  ].sort())
  t.notOk(gone.data.some((change: Json) => change.op === 'updated' && change.kind !== 'family'), 'no record is changed on its way out')
})

t.test('a change reaches the family\'s event stream', async t => {
  const { app, owner, familyId, doses } = await setup(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const abort = new AbortController()
  t.teardown(() => abort.abort())
  const res = await fetch(`${origin}/api/families/${familyId}/events`, { headers: bearer(owner.accessToken), signal: abort.signal })
  t.equal(res.status, 200)
  const dose = await made(app, owner, doses, { givenAt: at(2) })
  const reader = (res.body as ReadableStream<Uint8Array>).getReader()
  let text = ''
  const stop = Date.now() + 10_000
  while (!text.includes('"kind":"medicineCourse"') && Date.now() < stop) {
    const { value, done } = await reader.read()
    if (done) break
    text += new TextDecoder().decode(value)
  }
  abort.abort()
  const events = text.split('\n\n').filter(block => block.includes('event: change')).map(block => JSON.parse(block.split('\n').find(line => line.startsWith('data: '))?.slice(6) ?? 'null'))
  const ours = events.find(event => event.kind === 'medicineDose' && event.id === dose.id)
  t.same(ours?.record, dose, 'the dose, as its GET answers it')
  t.ok(events.some(event => event.kind === 'medicineCourse' && event.op === 'updated'), 'and its course moving on')
})

t.test('exports carry courses and doses: JSON, FHIR validated, and the family archive imported back', async t => {
  const { app, owner, familyId, child, course, doses } = await setup(t)
  const given = [
    await made(app, owner, doses, { givenAt: at(8), amount: 4 }),
    await made(app, owner, doses, { givenAt: at(0) }),
    await made(app, owner, doses, { givenAt: at(4) }),
    await made(app, owner, doses, { givenAt: at(12) })
  ]
  const open = await made(app, owner, `/api/children/${child.id}/medicine-courses`, { name: 'Vitamin D', doseAmount: 1, doseUnit: 'drop', minIntervalHours: 24, startDate: '2024-01-02' })
  const drop = await made(app, owner, `/api/medicine-courses/${open.id}/doses`, { givenAt: at(1) })
  const courses = (await get(app, owner, `/api/children/${child.id}/medicine-courses`)).data
  const byTime = [given[1], drop, given[2], given[0], given[3]].map(dose => dose.id)

  const document = await get(app, owner, `/api/children/${child.id}/export`)
  t.same(document.medicineCourses, courses, 'every course, newest first, as its GET answers it')
  t.same(document.medicineDoses.map((dose: Json) => dose.id), byTime, 'every dose of the child, oldest first')
  t.same(document.medicineDoses.find((dose: Json) => dose.id === given[3].id), await get(app, owner, `/api/medicine-doses/${given[3].id}`))

  const bundle = await get(app, owner, `/api/children/${child.id}/export?format=fhir`)
  const problems: string[] = []
  for (const { resource } of bundle.entry) {
    for (const issue of issuesOf(resource)) problems.push(`${resource.resourceType}: ${issue.severity} ${issue.details?.text ?? ''} ${issue.expression?.join(',') ?? ''}`)
  }
  for (const issue of issuesOf(bundle)) problems.push(`Bundle: ${issue.details?.text ?? ''}`)
  t.same(problems, [], 'the bundle validates against FHIR R4')
  const byId = new Map<string, Json>(bundle.entry.map((entry: Json) => [entry.resource.id, entry.resource]))
  t.match(byId.get(resourceId('medicine-course', course.id)), {
    resourceType: 'MedicationStatement',
    status: 'completed',
    medicationCodeableConcept: { text: COURSE.name },
    effectivePeriod: { start: '2024-03-01', end: '2024-03-05' },
    dosage: [{
      text: '5 ml, at least 4 h apart, at most 3 in 24 h',
      doseAndRate: [{ doseQuantity: { value: 5, unit: 'ml', system: 'http://unitsofmeasure.org', code: 'mL' } }],
      maxDosePerPeriod: { numerator: { value: 15, code: 'mL' }, denominator: { value: 24, code: 'h' } }
    }]
  }, 'a course is a MedicationStatement with its dose and limits')
  t.match(byId.get(resourceId('medicine-course', open.id)), { status: 'active', effectivePeriod: { start: '2024-01-02' }, dosage: [{ doseAndRate: [{ doseQuantity: { unit: 'drop', code: '[drp]' } }] }] })
  t.notOk(byId.get(resourceId('medicine-course', open.id)).dosage[0].maxDosePerPeriod, 'no daily limit, none said')
  const administration = byId.get(resourceId('medicine-dose', given[3].id))
  t.match(administration, {
    resourceType: 'MedicationAdministration',
    status: 'completed',
    medicationCodeableConcept: { text: COURSE.name },
    effectiveDateTime: at(12),
    supportingInformation: [{ reference: `urn:uuid:${resourceId('medicine-course', course.id)}`, type: 'MedicationStatement' }],
    dosage: { dose: { value: 5, unit: 'ml', code: 'mL' } },
    note: [{ text: /early/ }]
  }, 'a dose is a MedicationAdministration of its course\'s medicine, the course\'s dose when it has none, early noted')
  t.match(byId.get(resourceId('medicine-dose', given[0].id)), { dosage: { dose: { value: 4 } } }, 'its own amount when it has one')
  t.notOk(byId.get(resourceId('medicine-dose', given[1].id)).note, 'a dose on time has no note')

  const archive = await call(app, owner, 'GET', `/api/families/${familyId}/export`)
  t.equal(archive.statusCode, 200)
  const entries = await unzip(archive.rawPayload)
  const family = JSON.parse((entries.get('family.json') as Buffer).toString())
  t.same(family.children[0].medicineDoses.map((dose: Json) => dose.id), byTime, 'the archive\'s family.json holds them')
  t.match(JSON.parse((entries.get('manifest.json') as Buffer).toString()).counts, { medicineCourses: 2, medicineDoses: 5 }, 'and its manifest counts them')

  const target = await build(t, { env: OPEN })
  const importer = await register(target)
  const imported = await importArchive(target, importer, archive.rawPayload)
  t.equal(imported.statusCode, 201, imported.body)
  t.match(imported.json().counts, { medicineCourses: 2, medicineDoses: 5 })
  const [newChild] = (await get(target, importer, `/api/children?familyId=${imported.json().family.id}`)).data
  const strip = ({ id: _id, childId: _child, courseId: _course, version: _version, createdAt: _created, updatedAt: _updated, ...rest }: Json) => rest
  const again = (await get(target, importer, `/api/children/${newChild.id}/medicine-courses`)).data
  t.same(again.map(strip), courses.map(strip), 'each course again, with its next dose')
  for (const [from, to] of [[course.id, again[0].id], [open.id, again[1].id]]) {
    const before = (await get(app, owner, `/api/medicine-courses/${from}/doses`)).data
    const after = (await get(target, importer, `/api/medicine-courses/${to}/doses`)).data
    t.same(after.map(strip), before.map(strip), 'each course has its doses again, early ones early, linked to the new course')
    t.ok(after.every((dose: Json) => dose.courseId === to && dose.childId === newChild.id))
  }
  const changes = await target.sql`select kind, op, count(*)::int as n from changes where family_id = ${imported.json().family.id} and kind like 'medicine%' group by kind, op order by kind`
  t.same(changes.map(row => [row.kind, row.op, row.n]), [['medicineCourse', 'created', 2], ['medicineDose', 'created', 5]], 'one change a row: courses written with their next dose, doses with their flag')
})

t.test('the reminder scanner finds the running courses that remind, whose next dose is allowed', async t => {
  const { app, owner, familyId, child, course, doses } = await setup(t)
  const now = new Date('2024-03-02T10:00:00Z')
  await call(app, owner, 'PATCH', `/api/medicine-courses/${course.id}`, { remind: true })
  await made(app, owner, doses, { givenAt: at(20) })
  const quiet = await made(app, owner, `/api/children/${child.id}/medicine-courses`, COURSE)
  await made(app, owner, `/api/medicine-courses/${quiet.id}/doses`, { givenAt: at(20) })
  const ended = await made(app, owner, `/api/children/${child.id}/medicine-courses`, { ...COURSE, endDate: '2024-03-01', remind: true })
  await made(app, owner, `/api/medicine-courses/${ended.id}/doses`, { givenAt: at(20) })
  const later = await made(app, owner, `/api/children/${child.id}/medicine-courses`, { ...COURSE, minIntervalHours: 24, remind: true })
  await made(app, owner, `/api/medicine-courses/${later.id}/doses`, { givenAt: at(20) })
  await made(app, owner, `/api/children/${child.id}/medicine-courses`, { ...COURSE, remind: true })

  t.same(await allowedMedicineDoses(app.sql, now), [{
    courseId: course.id, courseName: COURSE.name, childId: child.id, childFirstName: 'Kim', familyId, nextDoseAllowedAt: new Date(at(24))
  }], 'not a course without remind, an ended one, one whose next dose is not yet allowed, or one without doses')
  t.same(await allowedMedicineDoses(app.sql, new Date('2024-03-06T10:00:00Z')), [], 'nor once the course has ended')
  t.equal((await allowedMedicineDoses(app.sql, new Date('2024-03-03T10:00:00Z'))).length, 2, 'the longer interval\'s dose is allowed a day later')
})

/** The command line, as an operator runs it. */
function cli (args: string[], env: Record<string, string>): Promise<{ code: number | null, stderr: string }> {
  const root = path.join(__dirname, '..')
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'cli.ts'), ...args], { cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', chunk => { stderr += chunk })
  return new Promise(resolve => child.on('exit', code => resolve({ code, stderr })))
}

t.test('a backup restores courses and doses as they were, each recorded once more', async t => {
  const { app, owner, doses } = await setup(t)
  await made(app, owner, doses, { givenAt: at(0) })
  await made(app, owner, doses, { givenAt: at(1), amount: 2.125 })
  const dir = tempDir(t)
  const env = (url: string, name: string) => ({ ...TEST_ENV, DATABASE_URL: url, DATA_DIR: path.join(dir, name), UPLOAD_DIR: path.join(dir, name, 'uploads'), AVATAR_DIR: path.join(dir, name, 'avatars') })
  const archive = path.join(dir, 'backup.tar')
  const backup = await cli(['backup', '--out', archive], env(app.db.url, 'source'))
  t.equal(backup.code, 0, backup.stderr)
  const target = await testDatabase(t)
  const restore = await cli(['restore', '--in', archive], env(target.url, 'target'))
  t.equal(restore.code, 0, restore.stderr)
  const rows = async (sql: typeof app.sql, table: string) => (await sql.unsafe(`select to_jsonb(x) - 'version' as row from ${table} x order by id`)).map(row => row.row)
  for (const table of ['medicine_courses', 'medicine_doses']) {
    t.same(await rows(target.sql, table), await rows(app.sql, table), `${table}: every row as it was, its next dose and early flags too`)
  }
  const recorded = await target.sql`select kind, op, count(*)::int as n from changes where kind like 'medicine%' and user_id is null group by kind, op order by kind`
  t.same(recorded.map(row => [row.kind, row.op, row.n]), [['medicineCourse', 'updated', 1], ['medicineDose', 'updated', 2]], 'the restore records one change a row, and nothing is worked out again')
})
