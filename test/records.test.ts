import t, { type Test } from 'tap'
import { bearer, build, call, register } from './helper'

const OPEN = { REGISTRATION: 'open' }
const BIRTH = '2022-03-15'

interface Kind {
  path: string
  date: string
  body: Record<string, unknown>
  /** A second, different body for PUT (all fields but the optional ones left out). */
  replace: Record<string, unknown>
  /** Optional fields and the value they take when set. */
  optional: Record<string, unknown>
  sorts: string[]
  filter?: { name: string, good: string, bad: string, matches: (record: any) => boolean }
}

const KINDS: Kind[] = [
  {
    path: 'measurements',
    date: 'measuredAt',
    body: { measuredAt: '2023-05-01', weightKg: 5.5 },
    replace: { measuredAt: '2023-05-02', heightCm: 61.25 },
    optional: { heightCm: 60.5, weightKg: 6.125, headCircumferenceCm: 40.25, notes: 'after lunch' },
    sorts: ['measuredAt', '-measuredAt', 'createdAt', '-createdAt']
  },
  {
    path: 'visits',
    date: 'date',
    body: { date: '2023-05-01', type: 'wellness' },
    replace: { date: '2023-05-02', type: 'dental' },
    optional: { provider: 'Dr. Ode', notes: 'all good' },
    sorts: ['date', '-date', 'type', '-type', 'createdAt', '-createdAt'],
    filter: { name: 'type', good: 'dental', bad: 'checkup', matches: v => v.type === 'dental' }
  },
  {
    path: 'medical-events',
    date: 'date',
    body: { date: '2023-05-01', type: 'vaccine', name: 'MMR' },
    replace: { date: '2023-05-02', type: 'medication', name: 'Paracetamol' },
    optional: { description: 'left arm' },
    sorts: ['date', '-date', 'type', '-type', 'createdAt', '-createdAt'],
    filter: { name: 'type', good: 'medication', bad: 'surgery', matches: e => e.type === 'medication' }
  },
  {
    path: 'illnesses',
    date: 'startDate',
    body: { startDate: '2023-05-01' },
    replace: { startDate: '2023-05-02', diagnosis: 'Flu' },
    optional: { endDate: '2023-05-09', diagnosis: 'Cold', symptoms: 'cough', medications: 'rest', temperatureC: 38.25, notes: 'fine' },
    sorts: ['startDate', '-startDate', 'endDate', '-endDate', 'createdAt', '-createdAt'],
    filter: { name: 'status', good: 'finished', bad: 'ongoing', matches: i => i.status === 'finished' }
  }
]

async function setup (t: Test) {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const child = (await call(app, owner, 'POST', '/api/children', { name: 'Kim', dateOfBirth: BIRTH, sex: 'female' })).json()
  const sibling = (await call(app, owner, 'POST', '/api/children', { name: 'Lou', dateOfBirth: BIRTH, sex: 'male' })).json()
  return { app, owner, child, sibling }
}

for (const kind of KINDS) {
  t.test(`${kind.path}: both route shapes, create, read, list, replace, delete`, async t => {
    const { app, owner, child } = await setup(t)
    const nested = await call(app, owner, 'POST', `/api/children/${child.id}/${kind.path}`, kind.body)
    t.equal(nested.statusCode, 201, 'created under the child')
    const record = nested.json()
    t.equal(nested.headers.location, `/api/${kind.path}/${record.id}`)
    t.equal(record.childId, child.id)
    for (const field of Object.keys(kind.optional)) {
      if (!(field in kind.body)) t.equal(record[field], null, `${field} is null when not sent`)
    }
    t.ok(record.createdAt && record.updatedAt)

    const flat = await call(app, owner, 'POST', `/api/${kind.path}`, { childId: child.id, ...kind.body, ...kind.optional })
    t.equal(flat.statusCode, 201, 'created flat with childId')
    for (const [field, value] of Object.entries(kind.optional)) t.same(flat.json()[field], value, `${field} is stored as sent`)

    const read = await call(app, owner, 'GET', `/api/${kind.path}/${record.id}`)
    t.same(read.json(), record, 'read back as created')

    const listNested = (await call(app, owner, 'GET', `/api/children/${child.id}/${kind.path}`)).json()
    const listFlat = (await call(app, owner, 'GET', `/api/${kind.path}?childId=${child.id}`)).json()
    t.same(listNested, listFlat, 'both list shapes answer the same')
    t.same(listNested.meta, { total: 2, limit: 50, offset: 0 })
    for (const item of listNested.data) {
      const one = await call(app, owner, 'GET', `/api/${kind.path}/${item.id}`)
      t.strictSame(item, one.json(), 'a listed item is the item as read alone: fields, nulls, numbers and timestamps')
    }
    t.equal((await call(app, owner, 'GET', `/api/${kind.path}`)).statusCode, 400, 'the flat list needs childId')

    const withOptional = flat.json()
    const replaced = await call(app, owner, 'PUT', `/api/${kind.path}/${withOptional.id}`, kind.replace)
    t.equal(replaced.statusCode, 200)
    for (const [field, value] of Object.entries(kind.replace)) t.same(replaced.json()[field], value)
    for (const field of Object.keys(kind.optional)) {
      if (!(field in kind.replace)) t.equal(replaced.json()[field], null, `PUT: omitted ${field} becomes null`)
    }
    t.equal(replaced.json().createdAt, withOptional.createdAt)
    t.ok(Date.parse(replaced.json().updatedAt) >= Date.parse(withOptional.updatedAt))
    for (const extra of [{ childId: child.id }, { id: 5 }, { createdAt: record.createdAt }, { unknown: 1 }]) {
      const res = await call(app, owner, 'PUT', `/api/${kind.path}/${withOptional.id}`, { ...kind.replace, ...extra })
      t.equal(res.statusCode, 400, `PUT refuses ${Object.keys(extra)[0]}`)
    }

    const deleted = await call(app, owner, 'DELETE', `/api/${kind.path}/${record.id}`)
    t.equal(deleted.statusCode, 204)
    t.equal(deleted.body, '')
    t.equal((await call(app, owner, 'GET', `/api/${kind.path}/${record.id}`)).statusCode, 404)
    t.equal((await call(app, owner, 'DELETE', `/api/${kind.path}/${record.id}`)).statusCode, 404)
    t.equal((await call(app, owner, 'GET', `/api/children/${child.id}/${kind.path}`)).json().meta.total, 1)
  })

  t.test(`${kind.path}: sorting, filters and stable pages`, async t => {
    const { app, owner, child, sibling } = await setup(t)
    const dates = ['2023-01-05', '2023-03-01', '2023-03-01', '2023-03-01', '2022-12-24', '2023-07-30', '2023-03-01']
    const created: any[] = []
    for (const [i, date] of dates.entries()) {
      const extra = kind.filter === undefined ? {} : i % 2 === 0 ? { [kind.filter.name === 'status' ? 'endDate' : 'type']: kind.filter.name === 'status' ? '2023-08-01' : kind.filter.good } : {}
      created.push((await call(app, owner, 'POST', `/api/children/${child.id}/${kind.path}`, { ...kind.body, [kind.date]: date, ...extra })).json())
    }
    await call(app, owner, 'POST', `/api/children/${sibling.id}/${kind.path}`, kind.body)

    const all = (await call(app, owner, 'GET', `/api/children/${child.id}/${kind.path}?limit=100`)).json()
    t.equal(all.meta.total, 7, 'only this child\'s records')
    const byDate = [...created].sort((a, b) => a[kind.date] === b[kind.date] ? b.id - a.id : a[kind.date] < b[kind.date] ? 1 : -1)
    t.same(all.data.map((r: any) => r.id), byDate.map(r => r.id), 'default: newest first, ties by id')

    for (const sort of kind.sorts) {
      const res = await call(app, owner, 'GET', `/api/children/${child.id}/${kind.path}?sort=${sort}&limit=100`)
      t.equal(res.statusCode, 200, `sort=${sort}`)
      const field = sort.replace('-', '')
      // An empty endDate (an illness still going on) sorts after every date.
      const values = res.json().data.map((r: any) => r[field] ?? '9999-12-31')
      const sorted = [...values].sort()
      if (sort.startsWith('-')) sorted.reverse()
      t.same(values, sorted, `sorted by ${sort}`)
    }
    const two = await call(app, owner, 'GET', `/api/children/${child.id}/${kind.path}?sort=${kind.date},-createdAt`)
    t.equal(two.statusCode, 200, 'two sort fields')
    for (const bad of ['name', 'id', '--date', `${kind.date},`, 'childId']) {
      const res = await call(app, owner, 'GET', `/api/children/${child.id}/${kind.path}?sort=${bad}`)
      t.equal(res.statusCode, 400, `sort=${bad} is refused`)
      t.equal(res.json().details.issues[0].path, '/query/sort')
    }

    const seen: number[] = []
    for (let offset = 0; offset < 7; offset += 3) {
      const page = (await call(app, owner, 'GET', `/api/children/${child.id}/${kind.path}?limit=3&offset=${offset}`)).json()
      t.same(page.meta, { total: 7, limit: 3, offset })
      seen.push(...page.data.map((r: any) => r.id))
    }
    t.same(seen, all.data.map((r: any) => r.id), 'pages are stable and complete')
    const beyond = (await call(app, owner, 'GET', `/api/children/${child.id}/${kind.path}?offset=50`)).json()
    t.same(beyond, { data: [], meta: { total: 7, limit: 50, offset: 50 } }, 'past the end: empty, with the total')
    for (const q of ['limit=0', 'limit=1001', 'offset=-1', 'limit=x']) {
      t.equal((await call(app, owner, 'GET', `/api/children/${child.id}/${kind.path}?${q}`)).statusCode, 400, q)
    }

    const ranged = (await call(app, owner, 'GET', `/api/children/${child.id}/${kind.path}?from=2023-01-05&to=2023-03-01`)).json()
    t.same(ranged.data.map((r: any) => r[kind.date]).sort(), ['2023-01-05', '2023-03-01', '2023-03-01', '2023-03-01', '2023-03-01'], 'from and to are inclusive')
    const empty = (await call(app, owner, 'GET', `/api/children/${child.id}/${kind.path}?from=2023-04-01&to=2023-02-01`)).json()
    t.same(empty.data, [], 'from after to gives an empty list')
    t.equal((await call(app, owner, 'GET', `/api/children/${child.id}/${kind.path}?from=2023-02-30`)).statusCode, 400, 'an impossible date')

    if (kind.filter !== undefined) {
      const filter = kind.filter
      const filtered = (await call(app, owner, 'GET', `/api/${kind.path}?childId=${child.id}&${filter.name}=${filter.good}`)).json()
      t.equal(filtered.meta.total, 4)
      t.ok(filtered.data.every(filter.matches), `${filter.name}=${filter.good}`)
      const res = await call(app, owner, 'GET', `/api/${kind.path}?childId=${child.id}&${filter.name}=${filter.bad}`)
      t.equal(res.statusCode, 400, `${filter.name}=${filter.bad} is refused`)
    }
  })

  t.test(`${kind.path}: rules between records`, async t => {
    const { app, owner, child, sibling } = await setup(t)
    const url = `/api/children/${child.id}/${kind.path}`
    const before = await call(app, owner, 'POST', url, { ...kind.body, [kind.date]: '2022-03-14' })
    t.equal(before.statusCode, 400, 'not before the child\'s birth')
    t.match(before.json().details.issues, [{ path: `/body/${kind.date}`, message: /date of birth/ }])
    t.equal((await call(app, owner, 'POST', url, { ...kind.body, [kind.date]: BIRTH })).statusCode, 201, 'on the day of birth')
    const tomorrow = new Date(Date.now() + 86400000).toISOString().slice(0, 10)
    // A visit is an appointment too: 730 days past that day of slack (test/visits-ahead.test.ts).
    const isVisit = kind.path === 'visits'
    const later = new Date(Date.now() + (isVisit ? 732 : 3) * 86400000).toISOString().slice(0, 10)
    t.equal((await call(app, owner, 'POST', url, { ...kind.body, [kind.date]: tomorrow })).statusCode, 201, 'a day of slack for time zones')
    const future = await call(app, owner, 'POST', url, { ...kind.body, [kind.date]: later })
    t.equal(future.statusCode, 400, 'not in the future')
    t.match(future.json().details.issues, [{ path: `/body/${kind.date}`, message: isVisit ? 'must not be more than 730 days ahead' : 'must not be in the future' }])

    if (kind.path !== 'visits') {
      const ownVisit = (await call(app, owner, 'POST', `/api/children/${child.id}/visits`, { date: '2023-05-01', type: 'sick' })).json()
      const otherVisit = (await call(app, owner, 'POST', `/api/children/${sibling.id}/visits`, { date: '2023-05-01', type: 'sick' })).json()
      const linked = await call(app, owner, 'POST', url, { ...kind.body, visitId: ownVisit.id })
      t.equal(linked.statusCode, 201)
      t.equal(linked.json().visitId, ownVisit.id)
      for (const visitId of [otherVisit.id, 999999]) {
        const res = await call(app, owner, 'POST', url, { ...kind.body, visitId })
        t.equal(res.statusCode, 400, 'a visit of another child or none')
        t.same(res.json().details.issues, [{ path: '/body/visitId', message: 'must be a visit of the same child' }])
        const put = await call(app, owner, 'PUT', `/api/${kind.path}/${linked.json().id}`, { ...kind.body, visitId })
        t.equal(put.statusCode, 400, 'on PUT too')
      }
      t.equal((await call(app, owner, 'DELETE', `/api/visits/${ownVisit.id}`)).statusCode, 204)
      const kept = await call(app, owner, 'GET', `/api/${kind.path}/${linked.json().id}`)
      t.equal(kept.statusCode, 200, 'deleting the visit keeps the record')
      t.equal(kept.json().visitId, null, 'with its visitId cleared')
    }
    const [{ n }] = await app.sql`select count(*) as n from ${app.sql(kind.path.replace('-', '_'))} where child_id = ${child.id}`
    t.equal(n, kind.path === 'visits' ? 2 : 3, 'refused writes wrote nothing')
  })
}

t.test('measurement values: ranges, decimals, types, at least one', async t => {
  const { app, owner, child } = await setup(t)
  const url = `/api/children/${child.id}/measurements`
  const ok = async (body: Record<string, unknown>) => (await call(app, owner, 'POST', url, { measuredAt: '2023-01-01', ...body })).statusCode
  t.equal(await ok({ heightCm: 20 }), 201)
  t.equal(await ok({ heightCm: 250 }), 201)
  t.equal(await ok({ heightCm: 19.99 }), 400)
  t.equal(await ok({ heightCm: 250.01 }), 400)
  t.equal(await ok({ weightKg: 0.2 }), 201)
  t.equal(await ok({ weightKg: 0.199 }), 400)
  t.equal(await ok({ weightKg: 250.001 }), 400)
  t.equal(await ok({ headCircumferenceCm: 15 }), 201)
  t.equal(await ok({ headCircumferenceCm: 80.01 }), 400)
  t.equal(await ok({ weightKg: 3.456 }), 201, 'weightKg takes 3 decimals')
  t.equal(await ok({ weightKg: 3.4567 }), 400, 'not 4')
  t.equal(await ok({ heightCm: 50.12 }), 201, 'heightCm takes 2 decimals')
  t.equal(await ok({ heightCm: 50.123 }), 400, 'not 3')
  t.equal(await ok({ headCircumferenceCm: 40.125 }), 400)
  t.equal(await ok({ weightKg: '3.1' }), 400, 'a string is not a number')
  t.equal(await ok({ weightKg: null, heightCm: null }), 400, 'at least one value')
  const none = await call(app, owner, 'POST', url, { measuredAt: '2023-01-01', notes: 'nothing measured' })
  t.same(none.json().details.issues, [{ path: '/body', message: 'must have at least one of heightCm, weightKg, headCircumferenceCm' }])
  const all = await call(app, owner, 'POST', url, { measuredAt: '2023-01-01', weightKg: 250 - 0.001, heightCm: 0.1 + 0.2 + 99.7 })
  t.equal(all.statusCode, 201)
  t.equal(all.json().weightKg, 249.999, 'decimals come back exactly')
  const many = await call(app, owner, 'POST', url, { measuredAt: 'yesterday', heightCm: 300, weightKg: -1, extra: true })
  t.equal(many.statusCode, 400)
  t.ok(many.json().details.issues.length >= 4, 'every issue is listed')
})

t.test('illnesses: status from endDate, endDate not before startDate, temperature', async t => {
  const { app, owner, child } = await setup(t)
  const url = `/api/children/${child.id}/illnesses`
  const current = (await call(app, owner, 'POST', url, { startDate: '2023-02-01', temperatureC: 39.5 })).json()
  t.equal(current.status, 'current')
  t.equal(current.temperatureC, 39.5)
  const ended = await call(app, owner, 'PUT', `/api/illnesses/${current.id}`, { startDate: '2023-02-01', endDate: '2023-02-01' })
  t.equal(ended.json().status, 'finished', 'an endDate on the start day finishes it')
  const backwards = await call(app, owner, 'POST', url, { startDate: '2023-02-10', endDate: '2023-02-09' })
  t.equal(backwards.statusCode, 400)
  t.same(backwards.json().details.issues, [{ path: '/body/endDate', message: 'must not be before startDate' }])
  for (const temperatureC of [33.99, 43.01, 38.123]) {
    t.equal((await call(app, owner, 'POST', url, { startDate: '2023-02-10', temperatureC })).statusCode, 400, `temperature ${temperatureC}`)
  }
  t.equal((await call(app, owner, 'POST', url, { startDate: '2023-02-10', diagnosis: 'x'.repeat(10001) })).statusCode, 400, 'free text holds at most 10,000 characters')
  t.equal((await call(app, owner, 'POST', url, { startDate: '2023-02-10', diagnosis: 'x'.repeat(10000) })).statusCode, 201)
  const blank = (await call(app, owner, 'POST', url, { startDate: '2023-02-10', diagnosis: '   ', notes: '' })).json()
  t.equal(blank.diagnosis, null, 'an empty optional string becomes null')
  t.equal(blank.notes, null)
})

t.test('visits with a measurement: both or neither', async t => {
  const { app, owner, child } = await setup(t)
  const created = await call(app, owner, 'POST', '/api/visits', {
    childId: child.id, date: '2023-06-01', type: 'wellness', provider: ' Dr. Ode ', measurement: { weightKg: 9.125, heightCm: 72.5, notes: 'on the clinic scale' }
  })
  t.equal(created.statusCode, 201)
  const visit = created.json()
  t.equal(visit.provider, 'Dr. Ode')
  t.match(visit.measurement, { childId: child.id, visitId: visit.id, measuredAt: '2023-06-01', weightKg: 9.125, heightCm: 72.5, headCircumferenceCm: null, notes: 'on the clinic scale' })
  t.same((await call(app, owner, 'GET', `/api/measurements/${visit.measurement.id}`)).json(), visit.measurement)
  t.notOk('measurement' in (await call(app, owner, 'GET', `/api/visits/${visit.id}`)).json(), 'a visit read alone has no measurement field')
  const plain = (await call(app, owner, 'POST', '/api/visits', { childId: child.id, date: '2023-06-02', type: 'sick' })).json()
  t.notOk('measurement' in plain)

  // Changing a visit's date moves nothing else: a date after its measurement's is refused.
  const past = await call(app, owner, 'PUT', `/api/visits/${visit.id}`, { date: '2023-06-05', type: 'wellness' })
  t.equal(past.statusCode, 400, 'not past the date of its measurement')
  t.same(past.json().details.issues, [{ path: '/body/date', message: `must not be after the date of a record linked to it (measurement ${visit.measurement.id} on 2023-06-01)` }])
  const moved = await call(app, owner, 'PUT', `/api/visits/${visit.id}`, { date: '2023-05-30', type: 'wellness' })
  t.equal(moved.json().date, '2023-05-30')
  t.equal((await call(app, owner, 'GET', `/api/measurements/${visit.measurement.id}`)).json().measuredAt, '2023-06-01', 'changing a visit\'s date moves nothing else')
  t.equal((await call(app, owner, 'PUT', `/api/visits/${visit.id}`, { date: '2023-06-05', type: 'wellness', measurement: { weightKg: 1 } })).statusCode, 400, 'PUT takes no measurement')

  const countVisits = async () => Number((await app.sql`select count(*) as n from visits`)[0].n)
  const before = await countVisits()
  for (const measurement of [{ weightKg: 500 }, { notes: 'no value' }, { measuredAt: '2023-01-01', weightKg: 3 }, { visitId: 1, weightKg: 3 }]) {
    const res = await call(app, owner, 'POST', `/api/children/${child.id}/visits`, { date: '2023-06-03', type: 'sick', measurement })
    t.equal(res.statusCode, 400, `measurement ${JSON.stringify(measurement)} is refused`)
  }
  t.equal(await countVisits(), before, 'a refused measurement leaves no visit')

  await app.sql.unsafe(`
    create function refuse_measurement() returns trigger language plpgsql as $$
    begin raise exception 'no measurements today' using errcode = '23514'; end $$;
    create trigger refuse before insert on measurements for each row execute function refuse_measurement();
  `)
  const failing = await call(app, owner, 'POST', `/api/children/${child.id}/visits`, { date: '2023-06-03', type: 'sick', measurement: { weightKg: 9 } })
  t.equal(failing.statusCode, 400, 'a measurement the database refuses')
  t.equal(await countVisits(), before, 'leaves no visit either: one transaction')
})

t.test('dates and decimals come back unchanged in far time zones', async t => {
  for (const zone of ['Pacific/Kiritimati', 'Pacific/Pago_Pago']) {
    const previous = process.env.TZ
    process.env.TZ = zone
    try {
      const app = await build(t, { env: OPEN, timezone: zone })
      const owner = await register(app)
      const child = (await call(app, owner, 'POST', '/api/children', { name: 'Kim', dateOfBirth: '2020-02-29', sex: 'other' })).json()
      t.equal(child.dateOfBirth, '2020-02-29', `${zone}: date of birth`)
      const m = (await call(app, owner, 'POST', `/api/children/${child.id}/measurements`, { measuredAt: '2021-01-01', weightKg: 3.456, heightCm: 50.1 })).json()
      t.same([m.measuredAt, m.weightKg, m.heightCm], ['2021-01-01', 3.456, 50.1], `${zone}: measurement`)
      const i = (await call(app, owner, 'POST', `/api/children/${child.id}/illnesses`, { startDate: '2021-12-31', endDate: '2022-01-01', temperatureC: 37.05 })).json()
      t.same([i.startDate, i.endDate, i.temperatureC], ['2021-12-31', '2022-01-01', 37.05], `${zone}: illness`)
      const listed = (await call(app, owner, 'GET', `/api/children/${child.id}/measurements?from=2021-01-01&to=2021-01-01`)).json()
      t.equal(listed.meta.total, 1, `${zone}: the date filter matches the very day`)
    } finally {
      process.env.TZ = previous
    }
  }
})

t.test('a create decides the session, the scope and the rules in the statement that writes, in the order of the checks', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const stranger = await register(app)
  const child = (await app.inject({ method: 'POST', url: '/api/children', headers: bearer(owner.accessToken), payload: { name: 'Ode', dateOfBirth: BIRTH, sex: 'male' } })).json()
  const url = `/api/children/${child.id}/measurements`
  const post = (token: string, payload: object) => app.inject({ method: 'POST', url, headers: bearer(token), payload })
  const count = async () => (await app.sql`select count(*)::int as n from measurements`)[0].n as number

  const beforeBirth = { measuredAt: '2020-01-01', weightKg: 4 }
  t.equal((await post(stranger.accessToken, beforeBirth)).statusCode, 403, 'a stranger\'s create that breaks a rule is a 403, not a 400')
  t.equal((await post(owner.accessToken, beforeBirth)).statusCode, 400, 'the same from the owner is a 400')
  const missing = await app.inject({ method: 'POST', url: '/api/children/999999/measurements', headers: bearer(owner.accessToken), payload: beforeBirth })
  t.equal(missing.statusCode, 404, 'a child that does not exist is a 404')
  const flat = await app.inject({ method: 'POST', url: '/api/measurements', headers: bearer(stranger.accessToken), payload: { childId: child.id, measuredAt: '2023-01-01', weightKg: 4 } })
  t.equal(flat.statusCode, 403, 'the flat route decides the same')

  const session = (await app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: owner.user.email, password: 'correct horse battery' } })).json()
  t.equal((await post(session.accessToken, { measuredAt: '2023-01-01', weightKg: 5 })).statusCode, 201)
  const written = await count()
  t.equal((await app.inject({ method: 'POST', url: '/api/auth/logout', headers: bearer(session.accessToken), payload: {} })).statusCode, 204)
  const revoked = await post(session.accessToken, { measuredAt: '2023-01-02', weightKg: 5 })
  t.equal(revoked.statusCode, 401, 'a revoked session is a 401')
  t.equal(revoked.json().code, 'UNAUTHORIZED')
  t.equal(await count(), written, 'and nothing is written')
  t.equal((await post(session.accessToken, { measuredAt: 'yesterday', weightKg: 5 })).statusCode, 400, 'its malformed body is found first: the session is checked with the write')
  t.equal((await post(session.accessToken, { measuredAt: '2023-01-02' })).statusCode, 401, 'a rule between fields comes after the session, as always')

  await app.sql`update users set disabled = true where id = ${owner.user.id}`
  const disabled = await post(owner.accessToken, { measuredAt: '2023-01-03', weightKg: 5 })
  t.equal(disabled.statusCode, 403)
  t.equal(disabled.json().code, 'ACCOUNT_DISABLED', 'a disabled account is refused')
  t.equal(await count(), written, 'and nothing is written')
})
