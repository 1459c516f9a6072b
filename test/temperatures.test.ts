import t, { type Test } from 'tap'
import { resourceId } from '../lib/fhir'
import { issuesOf } from './fhir-validate'
import { build, call, changesSince, familyOf, got as get, household, made, refusesEach, type Refusal } from './helper'
import { importedChild, unzip } from './import-helpers'

const OPEN = { REGISTRATION: 'open' }
type Json = any

/** An owner, a viewer and a stranger; a child born 2024-01-01 with an illness noted at 37.5 °C. */
async function setup (t: Test) {
  const app = await build(t, { env: OPEN })
  const { owner, familyId, viewer, stranger } = await household(app, { viewer: 'viewer', stranger: null })
  const child = await made(app, owner, '/api/children', { name: 'Kim', dateOfBirth: '2024-01-01', sex: 'female' })
  const illness = await made(app, owner, `/api/children/${child.id}/illnesses`, { startDate: '2024-03-01', diagnosis: 'Flu', temperatureC: 37.5 })
  return { app, owner, familyId, viewer, stranger, child, illness }
}

t.test('a reading through its whole life: create, list in order, replace, change, delete, history', async t => {
  const { app, owner, child, illness } = await setup(t)
  const base = `/api/illnesses/${illness.id}/temperatures`

  const res = await call(app, owner, 'POST', base, { takenAt: '2024-03-02T08:30:00+02:00', temperatureC: 38.75, method: 'ear', notes: 'after breakfast' })
  t.equal(res.statusCode, 201, res.body)
  const first = res.json()
  t.equal(res.headers.location, `/api/temperatures/${first.id}`)
  t.same(first, {
    id: first.id,
    childId: child.id,
    illnessId: illness.id,
    takenAt: '2024-03-02T06:30:00.000Z',
    temperatureC: 38.75,
    method: 'ear',
    notes: 'after breakfast',
    version: 1,
    createdAt: first.createdAt,
    updatedAt: first.updatedAt
  }, 'the reading as sent, its time in UTC')
  const earlier = await made(app, owner, base, { takenAt: '2024-03-01T20:00:00Z', temperatureC: 38.1 })
  t.equal(earlier.method, null, 'an omitted method is null')
  t.equal(earlier.notes, null)
  const later = await made(app, owner, base, { takenAt: '2024-03-03T07:15:30.5Z', temperatureC: 37.2, method: 'rectal' })
  t.equal(later.takenAt, '2024-03-03T07:15:30.500Z')

  const list = await call(app, owner, 'GET', base)
  t.equal(list.statusCode, 200)
  t.same(list.json().data.map((item: Json) => item.id), [earlier.id, first.id, later.id], 'oldest first by default')
  t.same(list.json().meta, { total: 3, limit: 50, offset: 0 })
  t.same(list.json().data[1], first, 'a listed reading is its GET, the same JSON')
  t.same((await get(app, owner, `${base}?sort=-takenAt`)).data.map((item: Json) => item.id), [later.id, first.id, earlier.id])
  t.same((await get(app, owner, `${base}?sort=createdAt`)).data.map((item: Json) => item.id), [first.id, earlier.id, later.id])
  t.same((await get(app, owner, `${base}?from=2024-03-02&to=2024-03-02`)).data.map((item: Json) => item.id), [first.id], 'from and to are inclusive UTC dates of takenAt')
  t.same((await get(app, owner, `${base}?from=2024-03-02`)).data.map((item: Json) => item.id), [first.id, later.id])
  t.same((await get(app, owner, `${base}?to=2024-03-01`)).data.map((item: Json) => item.id), [earlier.id])
  const paged = await get(app, owner, `${base}?limit=1&offset=1`)
  t.same(paged.data.map((item: Json) => item.id), [first.id])
  t.same(paged.meta, { total: 3, limit: 1, offset: 1 })
  t.equal((await call(app, owner, 'GET', `${base}?sort=temperatureC`)).statusCode, 400, 'a sort field not allowed')

  const etag = list.headers.etag as string
  t.equal((await call(app, owner, 'GET', base, undefined, { 'if-none-match': etag })).statusCode, 304, 'the list\'s ETag holds while nothing changes')

  const item = await call(app, owner, 'GET', `/api/temperatures/${first.id}`)
  t.equal(item.statusCode, 200)
  t.equal(item.headers.etag, '"1"')
  t.same(item.json(), first)

  const replaced = await call(app, owner, 'PUT', `/api/temperatures/${first.id}`, { takenAt: '2024-03-02T09:00:00Z', temperatureC: 39 })
  t.equal(replaced.statusCode, 200, replaced.body)
  t.match(replaced.json(), { takenAt: '2024-03-02T09:00:00.000Z', temperatureC: 39, method: null, notes: null, version: 2, illnessId: illness.id }, 'PUT replaces: omitted fields become null')
  t.not(replaced.json().updatedAt, first.updatedAt)

  const patched = await call(app, owner, 'PATCH', `/api/temperatures/${first.id}`, { method: 'axillary' })
  t.equal(patched.statusCode, 200, patched.body)
  t.match(patched.json(), { takenAt: '2024-03-02T09:00:00.000Z', temperatureC: 39, method: 'axillary', version: 3 }, 'PATCH keeps what it does not name')
  t.equal((await call(app, owner, 'PATCH', `/api/temperatures/${first.id}`, { notes: 'x', takenAt: null })).statusCode, 400, 'takenAt cannot be cleared')
  t.equal((await call(app, owner, 'PATCH', `/api/temperatures/${first.id}`, { temperatureC: null })).statusCode, 400, 'temperatureC cannot be cleared')
  t.not((await call(app, owner, 'GET', base, undefined, { 'if-none-match': etag })).statusCode, 304, 'the list\'s ETag moved')

  const deleted = await call(app, owner, 'DELETE', `/api/temperatures/${first.id}`)
  t.equal(deleted.statusCode, 204)
  t.equal((await call(app, owner, 'GET', `/api/temperatures/${first.id}`)).statusCode, 404, 'gone')
  t.equal((await call(app, owner, 'DELETE', `/api/temperatures/${first.id}`)).statusCode, 404)
  t.equal((await call(app, owner, 'PUT', `/api/temperatures/${first.id}`, { takenAt: '2024-03-02T09:00:00Z', temperatureC: 39 })).statusCode, 404)
  t.same((await get(app, owner, base)).data.map((item: Json) => item.id), [earlier.id, later.id])

  const history = await call(app, owner, 'GET', `/api/temperatures/${first.id}/history`)
  t.equal(history.statusCode, 200, 'the history is read after the deletion')
  const entries = history.json().data
  t.same(entries.map((entry: Json) => [entry.version, entry.op]), [[3, 'deleted'], [3, 'updated'], [2, 'updated'], [1, 'created']], 'newest first')
  t.same(entries[3].fields.takenAt, { from: null, to: '2024-03-02T06:30:00.000Z' })
  t.same(entries[2].fields, {
    takenAt: { from: '2024-03-02T06:30:00.000Z', to: '2024-03-02T09:00:00.000Z' },
    temperatureC: { from: 38.75, to: 39 },
    method: { from: 'ear', to: null },
    notes: { from: 'after breakfast', to: null }
  }, 'the fields a PUT altered')
  t.same(entries[1].fields, { method: { from: null, to: 'axillary' } })
  t.equal(entries[3].user.id, owner.user.id)
  t.equal((await call(app, owner, 'GET', '/api/temperatures/999999/history')).statusCode, 404, 'an id that never existed')
})

t.test('the illness answers its highest reading, and changes with it', async t => {
  const { app, owner, familyId, child, illness } = await setup(t)
  const base = `/api/illnesses/${illness.id}/temperatures`
  const illnessUrl = `/api/illnesses/${illness.id}`
  t.equal(illness.temperatureC, 37.5)
  t.equal(illness.maxTemperatureC, null, 'no readings: no highest')
  const start = await changesSince(app, owner, familyId, null)

  const read = async () => {
    const res = await call(app, owner, 'GET', illnessUrl)
    const listed = (await get(app, owner, `/api/children/${child.id}/illnesses`)).data.find((item: Json) => item.id === illness.id)
    t.same(listed, res.json(), 'the list, written by the database, answers the illness as its GET')
    return { body: res.json(), etag: res.headers.etag as string }
  }

  const high = await made(app, owner, base, { takenAt: '2024-03-02T08:00:00Z', temperatureC: 39.4 })
  let now = await read()
  t.match(now.body, { temperatureC: 39.4, maxTemperatureC: 39.4, version: 2 }, 'a first reading is the highest')
  t.equal(now.etag, '"2"')
  const feed = await changesSince(app, owner, familyId, start.next)
  t.same(feed.data.map((change: Json) => [change.kind, change.op, change.id]), [['temperature', 'created', high.id], ['illness', 'updated', illness.id]])
  t.same(feed.data[0].record, high, 'the reading\'s change carries it as its GET answers')
  t.equal(feed.data[0].childId, child.id)
  t.match(feed.data[1].record, { maxTemperatureC: 39.4, temperatureC: 39.4, version: 2 }, 'the illness\'s change carries the new highest')

  const low = await made(app, owner, base, { takenAt: '2024-03-02T20:00:00Z', temperatureC: 38 })
  now = await read()
  t.equal(now.etag, '"2"', 'a reading below the highest leaves the illness as it was')
  const quiet = await changesSince(app, owner, familyId, feed.next)
  t.same(quiet.data.map((change: Json) => change.kind), ['temperature'])

  await call(app, owner, 'PATCH', `/api/temperatures/${low.id}`, { temperatureC: 40.1 })
  now = await read()
  t.match(now.body, { temperatureC: 40.1, maxTemperatureC: 40.1, version: 3 }, 'a reading changed above the highest')
  t.equal((await call(app, owner, 'GET', illnessUrl, undefined, { 'if-none-match': '"2"' })).statusCode, 200, 'the old ETag no longer answers 304')

  const noted = await call(app, owner, 'PUT', illnessUrl, { startDate: '2024-03-01', diagnosis: 'Flu', temperatureC: 37.8 })
  t.equal(noted.statusCode, 200)
  t.match(noted.json(), { temperatureC: 40.1, maxTemperatureC: 40.1, version: 4 }, 'while readings exist the illness answers the highest')
  const patched = await call(app, owner, 'PATCH', illnessUrl, { notes: 'resting' })
  t.match(patched.json(), { temperatureC: 40.1, notes: 'resting' }, 'a PATCH keeps the noted temperature')
  t.equal((await call(app, owner, 'PUT', illnessUrl, { startDate: '2024-03-01', maxTemperatureC: 36 })).statusCode, 400, 'the highest reading is not written by the illness')

  await call(app, owner, 'DELETE', `/api/temperatures/${low.id}`)
  now = await read()
  t.match(now.body, { temperatureC: 39.4, maxTemperatureC: 39.4, version: 6 }, 'deleting the highest falls back to the next')
  await call(app, owner, 'DELETE', `/api/temperatures/${high.id}`)
  now = await read()
  t.match(now.body, { temperatureC: 37.8, maxTemperatureC: null, version: 7 }, 'without readings the noted temperature shows again')

  const history = (await get(app, owner, `${illnessUrl}/history`)).data
  t.same(history[0].fields, { temperatureC: { from: 39.4, to: 37.8 }, maxTemperatureC: { from: 39.4, to: null } }, 'the illness\'s history shows what its answers showed')
})

t.test('deleting an illness deletes its readings, each recorded as deleted', async t => {
  const { app, owner, familyId, child, illness } = await setup(t)
  const base = `/api/illnesses/${illness.id}/temperatures`
  const one = await made(app, owner, base, { takenAt: '2024-03-02T08:00:00Z', temperatureC: 38.5 })
  const two = await made(app, owner, base, { takenAt: '2024-03-02T12:00:00Z', temperatureC: 39 })
  const before = await changesSince(app, owner, familyId, null)
  t.equal((await call(app, owner, 'DELETE', `/api/illnesses/${illness.id}`)).statusCode, 204)
  t.equal((await call(app, owner, 'GET', `/api/temperatures/${one.id}`)).statusCode, 404)
  t.equal((await call(app, owner, 'GET', base)).statusCode, 404, 'the list of a deleted illness')
  const after = await changesSince(app, owner, familyId, before.next)
  t.same(after.data.map((change: Json) => [change.kind, change.op, change.id, change.childId]).sort(), [
    ['illness', 'deleted', illness.id, child.id], ['temperature', 'deleted', one.id, child.id], ['temperature', 'deleted', two.id, child.id]
  ].sort(), 'the illness and each reading, nothing else')
  t.equal((await call(app, owner, 'GET', `/api/temperatures/${two.id}/history`)).statusCode, 200)

  const other = await made(app, owner, `/api/children/${child.id}/illnesses`, { startDate: '2024-04-01' })
  await made(app, owner, `/api/illnesses/${other.id}/temperatures`, { takenAt: '2024-04-01T08:00:00Z', temperatureC: 38.5 })
  const mark = await changesSince(app, owner, familyId, null)
  t.equal((await call(app, owner, 'DELETE', `/api/children/${child.id}`)).statusCode, 204)
  const gone = await changesSince(app, owner, familyId, mark.next)
  t.ok(gone.data.some((change: Json) => change.kind === 'temperature' && change.op === 'deleted'), 'a child\'s deletion records its readings\' too')
  t.equal((await app.sql`select count(*)::int as n from temperatures`)[0].n, 0)
})

t.test('the family scope: viewers read, strangers are refused, an illness lists only its own readings', async t => {
  const { app, owner, viewer, stranger, child, illness } = await setup(t)
  const base = `/api/illnesses/${illness.id}/temperatures`
  const reading = await made(app, owner, base, { takenAt: '2024-03-02T08:00:00Z', temperatureC: 38.5 })
  const body = { takenAt: '2024-03-02T09:00:00Z', temperatureC: 38 }

  t.equal((await call(app, viewer, 'GET', base)).statusCode, 200, 'a viewer lists')
  t.equal((await call(app, viewer, 'GET', `/api/temperatures/${reading.id}`)).statusCode, 200, 'a viewer reads')
  t.equal((await call(app, viewer, 'GET', `/api/temperatures/${reading.id}/history`)).statusCode, 200)
  for (const [method, url, payload] of [['POST', base, body], ['PUT', `/api/temperatures/${reading.id}`, body], ['PATCH', `/api/temperatures/${reading.id}`, { notes: 'x' }], ['DELETE', `/api/temperatures/${reading.id}`, undefined]] as const) {
    const res = await call(app, viewer, method, url, payload)
    t.equal(res.statusCode, 403, `a viewer's ${method}`)
    t.equal(res.json().code, 'FORBIDDEN')
  }
  t.equal((await call(app, viewer, 'POST', base, { takenAt: 'soon', temperatureC: 38 })).statusCode, 400, 'a viewer\'s malformed write is a 400 first')

  for (const [method, url, payload] of [['GET', base, undefined], ['POST', base, body], ['GET', `/api/temperatures/${reading.id}`, undefined], ['PUT', `/api/temperatures/${reading.id}`, body], ['PATCH', `/api/temperatures/${reading.id}`, { notes: 'x' }], ['DELETE', `/api/temperatures/${reading.id}`, undefined], ['GET', `/api/temperatures/${reading.id}/history`, undefined]] as const) {
    const res = await call(app, stranger, method, url, payload)
    t.equal(res.statusCode, 403, `another family's ${method} ${url}`)
    t.equal(res.json().error, 'Access denied')
  }
  t.equal((await call(app, owner, 'GET', '/api/illnesses/999999/temperatures')).statusCode, 404, 'an illness that does not exist')
  t.equal((await call(app, owner, 'POST', '/api/illnesses/999999/temperatures', body)).statusCode, 404)
  t.equal((await call(app, owner, 'GET', '/api/illnesses/0/temperatures')).statusCode, 400, 'an id out of range')

  const second = await made(app, owner, `/api/children/${child.id}/illnesses`, { startDate: '2024-03-10' })
  t.same((await get(app, owner, `/api/illnesses/${second.id}/temperatures`)).data, [], 'another illness lists none of the first one\'s readings')
  t.equal((await call(app, owner, 'GET', `/api/illnesses/${reading.id + 1000}/temperatures`)).statusCode, 404, 'a reading\'s id is no illness')
  const moved = await call(app, owner, 'PATCH', `/api/temperatures/${reading.id}`, { illnessId: second.id })
  t.equal(moved.statusCode, 400, 'a reading never moves to another illness')
  t.same(moved.json().details.issues, [{ path: '/body/illnessId', message: 'is not allowed' }])
  t.equal((await get(app, owner, `/api/temperatures/${reading.id}`)).illnessId, illness.id)

  // Another family's illness cannot be reached through a reading created under it.
  const strangerFamily = familyOf(stranger)
  const theirChild = await made(app, stranger, '/api/children', { name: 'Other', dateOfBirth: '2023-01-01', sex: 'male', familyId: strangerFamily })
  const theirIllness = await made(app, stranger, `/api/children/${theirChild.id}/illnesses`, { startDate: '2023-05-01' })
  t.equal((await call(app, owner, 'POST', `/api/illnesses/${theirIllness.id}/temperatures`, body)).statusCode, 403, 'a reading under another family\'s illness')
  t.equal((await app.sql`select count(*)::int as n from temperatures where illness_id = ${theirIllness.id}`)[0].n, 0)
})

t.test('If-Match: a stale version is a 412 with the current one; of two writes with the same version exactly one wins', async t => {
  const { app, owner, illness } = await setup(t)
  const reading = await made(app, owner, `/api/illnesses/${illness.id}/temperatures`, { takenAt: '2024-03-02T08:00:00Z', temperatureC: 38.5 })
  const url = `/api/temperatures/${reading.id}`
  const ok = await call(app, owner, 'PATCH', url, { notes: 'one' }, { 'if-match': '"1"' })
  t.equal(ok.statusCode, 200)
  for (const [method, payload] of [['PUT', { takenAt: '2024-03-02T08:00:00Z', temperatureC: 38 }], ['PATCH', { notes: 'two' }], ['DELETE', undefined]] as const) {
    const stale = await call(app, owner, method, url, payload, { 'if-match': '"1"' })
    t.equal(stale.statusCode, 412, `a stale ${method}`)
    t.equal(stale.json().code, 'PRECONDITION_FAILED')
    t.same(stale.json().details, { currentVersion: 2 })
  }
  t.match(await get(app, owner, url), { notes: 'one', version: 2 }, 'nothing changed')

  const answers = await Promise.all([
    call(app, owner, 'PATCH', url, { notes: 'left' }, { 'if-match': '"2"' }),
    call(app, owner, 'PATCH', url, { notes: 'right' }, { 'if-match': '"2"' }),
    call(app, owner, 'PUT', url, { takenAt: '2024-03-02T08:00:00Z', temperatureC: 41 }, { 'if-match': '"2"' })
  ])
  t.same(answers.map(res => res.statusCode).sort(), [200, 412, 412], 'exactly one wins')
  t.equal((await get(app, owner, url)).version, 3)
  t.equal((await call(app, owner, 'DELETE', url, undefined, { 'if-match': '"3"' })).statusCode, 204)
})

t.test('bad input is a 400 naming the field, and nothing is written', async t => {
  const { app, owner, illness } = await setup(t)
  const base = `/api/illnesses/${illness.id}/temperatures`
  const future = new Date(Date.now() + 2 * 86400000).toISOString()
  const soon = new Date(Date.now() + 12 * 3600000).toISOString()
  const cases: Refusal[] = [
    ['not a timestamp', { takenAt: 'yesterday', temperatureC: 38 }, '/body/takenAt'],
    ['a date only', { takenAt: '2024-03-02', temperatureC: 38 }, '/body/takenAt', /^must be a date and time/],
    ['a time without its zone', { takenAt: '2024-03-02T08:00:00', temperatureC: 38 }, '/body/takenAt'],
    ['a day that does not exist', { takenAt: '2024-02-30T08:00:00Z', temperatureC: 38 }, '/body/takenAt'],
    ['a leap second', { takenAt: '2016-12-31T23:59:60Z', temperatureC: 38 }, '/body/takenAt'],
    ['before the child was born', { takenAt: '2023-12-31T08:00:00Z', temperatureC: 38 }, '/body/takenAt', /date of birth \(2024-01-01\)/],
    ['far in the future', { takenAt: future, temperatureC: 38 }, '/body/takenAt', /more than a day in the future/],
    ['too cold', { takenAt: '2024-03-02T08:00:00Z', temperatureC: 33.9 }, '/body/temperatureC'],
    ['too hot', { takenAt: '2024-03-02T08:00:00Z', temperatureC: 43.01 }, '/body/temperatureC'],
    ['too many decimals', { takenAt: '2024-03-02T08:00:00Z', temperatureC: 38.125 }, '/body/temperatureC', /at most 2 decimal/],
    ['a number as text', { takenAt: '2024-03-02T08:00:00Z', temperatureC: '38.5' }, '/body/temperatureC'],
    ['no temperature', { takenAt: '2024-03-02T08:00:00Z' }, '/body/temperatureC'],
    ['no time', { temperatureC: 38 }, '/body/takenAt'],
    ['an unknown method', { takenAt: '2024-03-02T08:00:00Z', temperatureC: 38, method: 'armpit' }, '/body/method', /^must be one of oral, rectal, axillary, ear, forehead$/],
    ['an unknown field', { takenAt: '2024-03-02T08:00:00Z', temperatureC: 38, childId: 1 }, '/body/childId'],
    ['notes too long', { takenAt: '2024-03-02T08:00:00Z', temperatureC: 38, notes: 'x'.repeat(10001) }, '/body/notes']
  ]
  await refusesEach(t, app, owner, base, cases)
  t.equal((await app.sql`select count(*)::int as n from temperatures`)[0].n, 0, 'nothing was written')

  const edges = [
    await call(app, owner, 'POST', base, { takenAt: '2024-01-01T00:00:00+14:00', temperatureC: 34 }),
    await call(app, owner, 'POST', base, { takenAt: soon, temperatureC: 43, method: 'forehead' }),
    await call(app, owner, 'POST', base, { takenAt: '2024-03-02t08:00:00.123456z', temperatureC: 36.65, method: null, notes: '' })
  ]
  t.same(edges.map(res => res.statusCode), [201, 201, 201], 'the first moment of the day of birth anywhere, a few hours ahead, and the bounds are accepted')
  t.equal(edges[0].json().takenAt, '2023-12-31T10:00:00.000Z')
  t.equal(edges[2].json().notes, null, 'an empty note is null')

  const reading = edges[2].json()
  const put = await call(app, owner, 'PUT', `/api/temperatures/${reading.id}`, { takenAt: '2023-12-30T08:00:00Z', temperatureC: 38 })
  t.equal(put.statusCode, 400, 'the rules hold for a PUT')
  const patch = await call(app, owner, 'PATCH', `/api/temperatures/${reading.id}`, { temperatureC: 44 })
  t.equal(patch.statusCode, 400, 'and a PATCH')
  t.equal((await call(app, owner, 'PATCH', `/api/temperatures/${reading.id}`, { method: 'armpit' })).statusCode, 400)

  const child = (await get(app, owner, `/api/illnesses/${illness.id}`)).childId
  const moved = await call(app, owner, 'PATCH', `/api/children/${child}`, { dateOfBirth: '2024-01-02' })
  t.equal(moved.statusCode, 400, 'the child\'s birth cannot move after a reading')
  t.match(moved.json().details.issues[0].message, /2024-01-01/)
})

t.test('exports carry the readings: JSON, FHIR validated, and the family archive', async t => {
  const { app, owner, familyId, child, illness } = await setup(t)
  const other = await made(app, owner, `/api/children/${child.id}/illnesses`, { startDate: '2024-04-01', diagnosis: 'Cold' })
  const readings = [
    await made(app, owner, `/api/illnesses/${illness.id}/temperatures`, { takenAt: '2024-03-02T08:00:00+01:00', temperatureC: 39.2, method: 'oral', notes: 'morning' }),
    await made(app, owner, `/api/illnesses/${other.id}/temperatures`, { takenAt: '2024-04-01T18:00:00Z', temperatureC: 38 }),
    await made(app, owner, `/api/illnesses/${illness.id}/temperatures`, { takenAt: '2024-03-01T22:00:00Z', temperatureC: 38.4, method: 'forehead' })
  ]

  const document = await get(app, owner, `/api/children/${child.id}/export`)
  t.same(document.temperatures, [readings[2], readings[0], readings[1]], 'every reading of the child, oldest first, as its GET answers it')
  t.same(document.illnesses, (await get(app, owner, `/api/children/${child.id}/illnesses`)).data, 'the illnesses with their highest readings')

  const bundle = await get(app, owner, `/api/children/${child.id}/export?format=fhir`)
  const problems: string[] = []
  for (const { resource } of bundle.entry) {
    for (const profile of [undefined, ...(resource.meta?.profile ?? [])]) {
      for (const issue of issuesOf(resource, profile)) problems.push(`${resource.resourceType} ${profile ?? ''}: ${issue.severity} ${issue.details?.text ?? ''} ${issue.expression?.join(',') ?? ''}`)
    }
  }
  for (const issue of issuesOf(bundle)) problems.push(`Bundle: ${issue.details?.text ?? ''}`)
  t.same(problems, [], 'the bundle validates against FHIR R4 and the vital-signs profiles')
  const byUrl = new Map<string, Json>(bundle.entry.map((entry: Json) => [entry.fullUrl, entry.resource]))
  const temperatures = bundle.entry.map((entry: Json) => entry.resource).filter((resource: Json) => resource.resourceType === 'Observation' && resource.code.coding[0].code === '8310-5')
  t.equal(temperatures.length, 3, 'one body temperature Observation a reading, none for the illnesses that have readings')
  const first = temperatures.find((resource: Json) => resource.id === resourceId('temperature', readings[0].id))
  t.match(first, {
    status: 'final',
    category: [{ coding: [{ code: 'vital-signs' }] }],
    code: { coding: [{ system: 'http://loinc.org', code: '8310-5' }] },
    effectiveDateTime: '2024-03-02T07:00:00.000Z',
    valueQuantity: { value: 39.2, unit: '°C', system: 'http://unitsofmeasure.org', code: 'Cel' },
    method: { text: 'oral' },
    note: [{ text: 'morning' }],
    focus: [{ type: 'Condition' }]
  }, 'at the moment it was taken, in Cel, with its method')
  t.same(byUrl.get(first.focus[0].reference)?.id, resourceId('illness', illness.id), 'about its illness\'s Condition, in the bundle')
  t.notOk(temperatures.find((resource: Json) => resource.id === resourceId('temperature', readings[1].id)).method, 'no method when none was given')

  const lone = await made(app, owner, `/api/children/${child.id}/illnesses`, { startDate: '2024-05-01', temperatureC: 38.3 })
  const again = await get(app, owner, `/api/children/${child.id}/export?format=fhir`)
  t.ok(again.entry.some((entry: Json) => entry.resource.id === resourceId('illness', lone.id, 'body-temperature')), 'an illness without readings keeps its noted temperature as an Observation')

  const archive = await call(app, owner, 'GET', `/api/families/${familyId}/export`)
  t.equal(archive.statusCode, 200)
  const entries = await unzip(archive.rawPayload)
  const family = JSON.parse((entries.get('family.json') as Buffer).toString())
  t.same(family.children[0].temperatures.map((reading: Json) => reading.id), [readings[2].id, readings[0].id, readings[1].id], 'the archive\'s family.json holds them')
  t.equal(JSON.parse((entries.get('manifest.json') as Buffer).toString()).counts.temperatures, 3, 'and its manifest counts them')

  const { target, importer, familyId: importedFamily, counts, child: newChild } = await importedChild(t, archive.rawPayload, OPEN)
  t.equal(counts.temperatures, 3)
  const illnesses = (await get(target, importer, `/api/children/${newChild.id}/illnesses`)).data
  const strip = ({ id: _id, childId: _child, illnessId: _illness, version: _version, createdAt: _created, updatedAt: _updated, ...rest }: Json) => rest
  for (const [from, to] of [[illness.id, illnesses.find((item: Json) => item.diagnosis === 'Flu').id], [other.id, illnesses.find((item: Json) => item.diagnosis === 'Cold').id]]) {
    const before = (await get(app, owner, `/api/illnesses/${from}/temperatures`)).data
    const after = (await get(target, importer, `/api/illnesses/${to}/temperatures`)).data
    t.same(after.map(strip), before.map(strip), 'each illness has its readings again, new ids, linked to the new illness')
    t.ok(after.every((reading: Json) => reading.childId === newChild.id && reading.illnessId === to && reading.version === 1))
    t.equal((await get(target, importer, `/api/illnesses/${to}`)).maxTemperatureC, (await get(app, owner, `/api/illnesses/${from}`)).maxTemperatureC)
  }
  const changes = await target.sql`select kind, op, count(*)::int as n from changes where family_id = ${importedFamily} and kind in ('temperature', 'illness') group by kind, op order by kind`
  t.same(changes.map(row => [row.kind, row.op, row.n]), [['illness', 'created', 3], ['temperature', 'created', 3]], 'one change a reading and an illness, the illness written with its highest reading')
})

t.test('the database refuses what the API refuses: a reading of another child than its illness\'s, values out of range', async t => {
  const { app, owner, illness } = await setup(t)
  const other = await made(app, owner, '/api/children', { name: 'Lou', dateOfBirth: '2023-01-01', sex: 'male' })
  const refused = async (what: string, insert: () => Promise<unknown>, code: string) => {
    const error = await insert().then(() => null, (caught: { code?: string }) => caught)
    t.equal(error?.code, code, what)
  }
  await refused('a child other than the illness\'s', () => app.sql`insert into temperatures (child_id, illness_id, taken_at, temperature_c) values (${other.id}, ${illness.id}, now(), 38)`, '23503')
  await refused('above 43', () => app.sql`insert into temperatures (child_id, illness_id, taken_at, temperature_c) values (${illness.childId}, ${illness.id}, now(), 43.5)`, '23514')
  await refused('three decimals', () => app.sql`insert into temperatures (child_id, illness_id, taken_at, temperature_c) values (${illness.childId}, ${illness.id}, now(), 38.125)`, '23514')
  await refused('an unknown method', () => app.sql`insert into temperatures (child_id, illness_id, taken_at, temperature_c, method) values (${illness.childId}, ${illness.id}, now(), 38, 'armpit')`, '23514')
  await refused('no time', () => app.sql`insert into temperatures (child_id, illness_id, temperature_c) values (${illness.childId}, ${illness.id}, 38)`, '23502')
  t.equal((await app.sql`select count(*)::int as n from temperatures`)[0].n, 0)
})
