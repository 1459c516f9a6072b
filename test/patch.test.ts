import t from 'tap'
import { build, call, household, type App, type Pair } from './helper'

const OPEN = { REGISTRATION: 'open' }

async function changeCount (app: App, pair: Pair, familyId: number): Promise<number> {
  const res = await call(app, pair, 'GET', `/api/families/${familyId}/changes?limit=1000`)
  return res.json().data.length
}

/** Each kind: a full record, one field to change, one optional field to clear, a required field, and a rule broken by the merged record. */
const KINDS = [
  {
    path: 'measurements',
    full: { measuredAt: '2024-03-01', heightCm: 61.5, weightKg: 6.123, headCircumferenceCm: 40.2, notes: 'after lunch' },
    change: { weightKg: 6.5 },
    clear: 'notes',
    required: 'measuredAt',
    // Clearing the other two values leaves a measurement of nothing.
    broken: { heightCm: null, headCircumferenceCm: null, weightKg: null },
    brokenPath: '/body'
  },
  {
    path: 'visits',
    full: { date: '2024-03-02', type: 'wellness', provider: 'Dr. Lind', notes: 'all fine' },
    change: { type: 'sick' },
    clear: 'provider',
    required: 'type',
    broken: { date: '2023-12-31' },
    brokenPath: '/body/date'
  },
  {
    path: 'medical-events',
    full: { date: '2024-03-03', type: 'vaccine', name: 'MMR', description: 'left arm' },
    change: { name: 'MMR 1' },
    clear: 'description',
    required: 'name',
    broken: { date: '2999-01-01' },
    brokenPath: '/body/date'
  },
  {
    path: 'illnesses',
    full: { startDate: '2024-03-04', endDate: '2024-03-09', diagnosis: 'cold', symptoms: 'cough', medications: 'none', temperatureC: 38.4, notes: 'slept a lot' },
    change: { symptoms: 'cough, runny nose' },
    clear: 'medications',
    required: 'startDate',
    // The kept end date would come before the new start.
    broken: { startDate: '2024-03-10' },
    brokenPath: '/body/endDate'
  }
] as const

t.test('PATCH of every kind of record: omitted fields kept, null clears, rules on the merged record', async t => {
  const app = await build(t, { env: OPEN })
  const { owner, familyId: family, viewer, stranger } = await household(app, { viewer: 'viewer', stranger: null })
  const child = (await call(app, owner, 'POST', '/api/children', { name: 'Kim', dateOfBirth: '2024-01-01', sex: 'female' })).json()
  const other = (await call(app, owner, 'POST', '/api/children', { name: 'Lou', dateOfBirth: '2023-01-01', sex: 'male' })).json()
  const othersVisit = (await call(app, owner, 'POST', `/api/children/${other.id}/visits`, { date: '2024-02-01', type: 'wellness' })).json()

  for (const kind of KINDS) {
    await t.test(kind.path, async t => {
      const created = await call(app, owner, 'POST', `/api/children/${child.id}/${kind.path}`, kind.full)
      t.equal(created.statusCode, 201, created.body)
      const record = created.json()
      const url = `/api/${kind.path}/${record.id}`

      const changed = await call(app, owner, 'PATCH', url, kind.change)
      t.equal(changed.statusCode, 200, changed.body)
      const after = changed.json()
      t.match(after, { ...kind.full, ...kind.change, version: record.version + 1 }, 'the changed field changes, every other is kept')
      t.same((await call(app, owner, 'GET', url)).json(), after, 'read back as answered')
      const history = (await call(app, owner, 'GET', `${url}/history`)).json()
      t.same(Object.keys(history.data[0].fields), Object.keys(kind.change), 'the history names only the changed field')

      const cleared = await call(app, owner, 'PATCH', url, { [kind.clear]: null })
      t.equal(cleared.statusCode, 200, cleared.body)
      t.equal(cleared.json()[kind.clear], null, 'null clears')
      t.equal(cleared.json().version, record.version + 2)

      const emptyString = Object.keys(kind.full).find(field => typeof (kind.full as Record<string, unknown>)[field] === 'string' && field !== kind.required && !/date|At$|^type$/i.test(field))
      if (emptyString !== undefined) {
        const blank = await call(app, owner, 'PATCH', url, { [emptyString]: '   ' })
        t.equal(blank.statusCode, 200, blank.body)
        t.equal(blank.json()[emptyString], null, 'an empty optional string clears, as in PUT')
      }
      const current = (await call(app, owner, 'GET', url)).json()

      const requiredNull = await call(app, owner, 'PATCH', url, { [kind.required]: null })
      t.equal(requiredNull.statusCode, 400, 'a field the record must have cannot be cleared')
      t.equal(requiredNull.json().code, 'VALIDATION_ERROR')
      t.equal(requiredNull.json().details.issues[0].path, `/body/${kind.required}`)

      const broken = await call(app, owner, 'PATCH', url, kind.broken)
      t.equal(broken.statusCode, 400, 'the rules hold for the record as it would become')
      t.equal(broken.json().details.issues[0].path, kind.brokenPath, broken.body)

      const unknown = await call(app, owner, 'PATCH', url, { id: 5 })
      t.equal(unknown.statusCode, 400, 'a read-only field is an unknown property')
      const wrongType = await call(app, owner, 'PATCH', url, { [kind.required]: 12 })
      t.equal(wrongType.statusCode, 400)

      if (kind.path !== 'visits') {
        const foreign = await call(app, owner, 'PATCH', url, { visitId: othersVisit.id })
        t.equal(foreign.statusCode, 400, 'a visit of another child')
        t.same(foreign.json().details.issues, [{ path: '/body/visitId', message: 'must be a visit of the same child' }])
      }

      const before = await changeCount(app, owner, family)
      const empty = await call(app, owner, 'PATCH', url, {})
      t.equal(empty.statusCode, 200)
      t.same(empty.json(), current, 'an empty body answers the record unchanged')
      t.equal(await changeCount(app, owner, family), before, 'and records no change')

      const stale = await call(app, owner, 'PATCH', url, kind.change, { 'if-match': `"${current.version - 1}"` })
      t.equal(stale.statusCode, 412, 'a stale If-Match')
      t.same(stale.json().details, { currentVersion: current.version })
      const fresh = await call(app, owner, 'PATCH', url, { [kind.clear]: (kind.full as Record<string, unknown>)[kind.clear] }, { 'if-match': `"${current.version}"` })
      t.equal(fresh.statusCode, 200, 'a current If-Match')
      t.equal(fresh.json().version, current.version + 1)

      t.equal((await call(app, viewer, 'PATCH', url, kind.change)).statusCode, 403, 'a viewer may not change')
      t.equal((await call(app, viewer, 'PATCH', url, { nope: 1 })).statusCode, 400, 'a viewer\'s malformed write is a 400')
      t.equal((await call(app, stranger, 'PATCH', url, kind.change)).statusCode, 403, 'another family\'s record')
      t.equal((await call(app, owner, 'PATCH', `/api/${kind.path}/2147483647`, kind.change)).statusCode, 404)
      t.same((await call(app, owner, 'GET', url)).json(), fresh.json(), 'nothing changed by the refused writes')
    })
  }

  await t.test('two PATCHes with the same If-Match: exactly one succeeds', async t => {
    const record = (await call(app, owner, 'POST', `/api/children/${child.id}/measurements`, { measuredAt: '2024-04-01', weightKg: 7 })).json()
    const tag = { 'if-match': `"${record.version}"` }
    const answers = await Promise.all([
      call(app, owner, 'PATCH', `/api/measurements/${record.id}`, { weightKg: 7.1 }, tag),
      call(app, owner, 'PATCH', `/api/measurements/${record.id}`, { heightCm: 65 }, tag)
    ])
    t.same(answers.map(answer => answer.statusCode).sort(), [200, 412])
    const final = (await call(app, owner, 'GET', `/api/measurements/${record.id}`)).json()
    t.equal(final.version, record.version + 1)
    // Without If-Match both go through, and neither loses the other's field.
    await Promise.all([
      call(app, owner, 'PATCH', `/api/measurements/${record.id}`, { notes: 'a' }),
      call(app, owner, 'PATCH', `/api/measurements/${record.id}`, { headCircumferenceCm: 42 })
    ])
    t.match((await call(app, owner, 'GET', `/api/measurements/${record.id}`)).json(), { notes: 'a', headCircumferenceCm: 42, version: record.version + 3 })
  })
})

t.test('PATCH of a child', async t => {
  const app = await build(t, { env: OPEN })
  const { owner, viewer } = await household(app, { viewer: 'viewer' })
  const kim = (await call(app, owner, 'POST', '/api/children', { name: 'Kim', dateOfBirth: '2024-01-01', sex: 'female' })).json()
  const url = `/api/children/${kim.id}`
  await call(app, owner, 'POST', `${url}/measurements`, { measuredAt: '2024-02-01', weightKg: 4 })

  const renamed = await call(app, owner, 'PATCH', url, { name: '  Kimberly ' })
  t.equal(renamed.statusCode, 200, renamed.body)
  t.match(renamed.json(), { name: 'Kimberly', dateOfBirth: '2024-01-01', sex: 'female', version: kim.version + 1 }, 'the name is trimmed, the rest kept')
  t.equal((await call(app, owner, 'PATCH', url, { sex: 'other' })).json().sex, 'other')

  for (const [label, body, path] of [
    ['an empty name', { name: ' ' }, '/body/name'],
    ['a null name', { name: null }, '/body/name'],
    ['a null date of birth', { dateOfBirth: null }, '/body/dateOfBirth'],
    ['a bad sex', { sex: 'unknown' }, '/body/sex'],
    ['a birth after the first record', { dateOfBirth: '2024-03-01' }, '/body/dateOfBirth'],
    ['a future birth', { dateOfBirth: '2999-01-01' }, '/body/dateOfBirth'],
    ['an unknown field', { familyId: 3 }, '/body']
  ] as const) {
    const res = await call(app, owner, 'PATCH', url, body)
    t.equal(res.statusCode, 400, label)
    t.equal(res.json().details.issues[0].path.startsWith(path), true, `${label}: ${res.body}`)
  }
  const moved = await call(app, owner, 'PATCH', url, { dateOfBirth: '2023-12-01' })
  t.equal(moved.statusCode, 200, 'a birth before the first record')
  const current = moved.json()
  t.same((await call(app, owner, 'PATCH', url, {})).json(), current, 'an empty body changes nothing')
  const stale = await call(app, owner, 'PATCH', url, { name: 'X' }, { 'if-match': '"1"' })
  t.equal(stale.statusCode, 412)
  t.same(stale.json().details, { currentVersion: current.version })
  t.equal((await call(app, owner, 'PATCH', url, { name: 'Kim' }, { 'if-match': `"${current.version}"` })).statusCode, 200)
  t.equal((await call(app, viewer, 'PATCH', url, { name: 'X' })).statusCode, 403)
  t.equal((await call(app, owner, 'GET', url)).json().name, 'Kim')
})
