import t from 'tap'
import { build, call, register, tempDir } from './helper'
import { csvRows, dayAfter, lmsAt, MONTH, scoreByHand } from './cdc-by-hand'

const OPEN = { REGISTRATION: 'open' }

// CDC's cut-offs on the modified z, by chart, as the by-hand scores need them.
const WEIGHT = [-5, 8] as const
const STATURE = [-5, 4] as const

t.test('the growth route scores on the chart asked for, or the child\'s: CDC as computed by hand from CDC\'s file', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const born = '2019-01-10'
  const boy = (await call(app, owner, 'POST', '/api/children', { name: 'Ben', dateOfBirth: born, sex: 'male' })).json()
  const base = `/api/children/${boy.id}`
  // 40 months and 11 days: between two of CDC's rows of the 2 to 20 year charts.
  const at = 1229
  const measured = dayAfter(born, at)
  await call(app, owner, 'POST', `${base}/measurements`, { measuredAt: measured, weightKg: 15.2, heightCm: 99.4 })

  const who = (await call(app, owner, 'GET', `${base}/growth`)).json()
  t.equal(who.reference, 'who', 'the child\'s chart by default: WHO')
  t.equal(who.points[0].weightForAge.reference, 'who-2006')

  const cdc = (await call(app, owner, 'GET', `${base}/growth?reference=cdc`)).json()
  t.equal(cdc.reference, 'cdc')
  t.equal(cdc.source, 'CDC 2000 growth charts')
  const months = at / MONTH
  const weight = lmsAt(csvRows('wtage.csv'), 'male', months)
  const stature = lmsAt(csvRows('statage.csv'), 'male', months)
  t.ok(weight?.between === true && stature?.between === true, 'the age lies between two rows')
  const point = cdc.points[0]
  t.same(point.weightForAge, { ...scoreByHand(15.2, weight!, 'cdc-2000', WEIGHT), crossedLines: null }, 'weight-for-age as by hand')
  t.same(point.heightForAge, { ...scoreByHand(99.4, stature!, 'cdc-2000', STATURE), crossedLines: null }, 'stature-for-age as by hand')
  t.equal(point.weightForHeight, null, 'no weight-for-stature chart from 24 months')
  t.equal(point.bmiForAge.reference, 'cdc-2000')
  t.equal(point.headCircumferenceForAge, null)

  await call(app, owner, 'PATCH', base, { growthReference: 'cdc' })
  const chosen = (await call(app, owner, 'GET', `${base}/growth`)).json()
  t.equal(chosen.reference, 'cdc', 'the child\'s chart when the query names none')
  t.same(chosen.points, cdc.points)
  t.equal((await call(app, owner, 'GET', `${base}/growth?reference=who`)).json().points[0].weightForAge.reference, 'who-2006', 'the query wins')

  for (const bad of ['CDC', 'nchs', 'who-2006']) {
    const res = await call(app, owner, 'GET', `${base}/growth?reference=${bad}`)
    t.equal(res.statusCode, 400, `reference=${bad}`)
    t.equal(res.json().code, 'VALIDATION_ERROR')
  }
})

t.test('auto: WHO 2006 until 730.5 days of the scored age, CDC 2000 from then; a preterm child by the corrected age', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const born = '2020-02-01'
  const girl = (await call(app, owner, 'POST', '/api/children', { name: 'Ida', dateOfBirth: born, sex: 'female', growthReference: 'auto' })).json()
  for (const day of [730, 731]) await call(app, owner, 'POST', `/api/children/${girl.id}/measurements`, { measuredAt: dayAfter(born, day), weightKg: 12, heightCm: 86 })
  const growth = (await call(app, owner, 'GET', `/api/children/${girl.id}/growth`)).json()
  t.equal(growth.reference, 'auto')
  t.same(growth.points.map((p: any) => [p.ageDays, p.weightForAge.reference, p.heightForAge.reference]), [[730, 'who-2006', 'who-2006'], [731, 'cdc-2000', 'cdc-2000']])

  // Born at 32 weeks: under 24 months of chronological age the corrected age (56 days less) is scored, on WHO's chart.
  const early = (await call(app, owner, 'POST', '/api/children', { name: 'Pia', dateOfBirth: born, sex: 'female', gestationalAgeAtBirthWeeks: 32, growthReference: 'cdc' })).json()
  await call(app, owner, 'POST', `/api/children/${early.id}/measurements`, { measuredAt: dayAfter(born, 400), weightKg: 8.1 })
  const corrected = (await call(app, owner, 'GET', `/api/children/${early.id}/growth`)).json().points[0]
  t.equal(corrected.scoredAt, 'corrected')
  const lms = lmsAt(csvRows('wtageinf.csv'), 'female', 344 / MONTH)
  t.same(corrected.weightForAge, { ...scoreByHand(8.1, lms!, 'cdc-2000-infant', WEIGHT), crossedLines: null }, 'CDC at the corrected age, 344 days')
})

t.test('velocity, crossings and alerts in the growth answer; from keeps the measurements before it for them', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const born = '2023-01-01'
  const child = (await call(app, owner, 'POST', '/api/children', { name: 'Noa', dateOfBirth: born, sex: 'female', growthReference: 'cdc' })).json()
  const base = `/api/children/${child.id}`
  // A weight at CDC's 75th percentile, then at its 10th three months later.
  const rows = csvRows('wtageinf.csv')
  const at = (day: number, z: number) => {
    const { l, m, s } = lmsAt(rows, 'female', day / MONTH)!
    return Math.round(m * (1 + l * s * z) ** (1 / l) * 1000) / 1000
  }
  await call(app, owner, 'POST', `${base}/measurements`, { measuredAt: dayAfter(born, 180), weightKg: at(180, 0.6745) })
  await call(app, owner, 'POST', `${base}/measurements`, { measuredAt: dayAfter(born, 270), weightKg: at(270, -1.2816) })
  const growth = (await call(app, owner, 'GET', `${base}/growth`)).json()
  const [first, second] = growth.points
  t.equal(first.velocity, null, 'nothing to compare the first with')
  t.same(second.velocity, { weightKgPerMonth: Math.round((second.weightKg - first.weightKg) / (90 / MONTH) * 100) / 100, heightCmPerMonth: null, headCircumferenceCmPerMonth: null, sinceDays: 90 })
  t.equal(first.weightForAge.crossedLines, null)
  t.equal(second.weightForAge.crossedLines, -3, 'the 50th, 25th and 10th lines')
  t.same(growth.alerts, [{ measurementId: second.measurementId, indicator: 'weightForAge', kind: 'crossing-down' }])

  const ranged = (await call(app, owner, 'GET', `${base}/growth?from=${dayAfter(born, 200)}`)).json()
  t.same(ranged.points.map((p: any) => p.measurementId), [second.measurementId], 'only the points in range')
  t.same(ranged.points[0], second, 'with the velocity and crossings of the measurement before the range')
  t.same(ranged.alerts, growth.alerts)
  const before = (await call(app, owner, 'GET', `${base}/growth?to=${dayAfter(born, 200)}`)).json()
  t.same(before.alerts, [], 'an alert lies outside the range')
})

t.test('the growth answer is cached and version-checked per chart', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const child = (await call(app, owner, 'POST', '/api/children', { name: 'Lev', dateOfBirth: '2021-06-01', sex: 'male' })).json()
  await call(app, owner, 'POST', `/api/children/${child.id}/measurements`, { measuredAt: '2024-01-01', weightKg: 15 })
  const url = `/api/children/${child.id}/growth`
  const first = await call(app, owner, 'GET', url)
  const etag = String(first.headers.etag)
  t.equal((await call(app, owner, 'GET', url, undefined, { 'if-none-match': etag })).statusCode, 304)
  await call(app, owner, 'PATCH', `/api/children/${child.id}`, { growthReference: 'cdc' })
  const after = await call(app, owner, 'GET', url, undefined, { 'if-none-match': etag })
  t.equal(after.statusCode, 200, 'a changed chart changes the answer and its ETag')
  t.equal(after.json().points[0].weightForAge.reference, 'cdc-2000')
  t.not(after.headers.etag, etag)
})

t.test('CDC needs no WHO tables: cdc answers while who and auto answer 503', async t => {
  const dir = tempDir(t)
  const app = await build(t, { env: { ...OPEN, GROWTH_DATA_DIR: dir, GROWTH_DATA_URL: 'http://127.0.0.1:1/' } })
  await app.growth.loading
  const owner = await register(app)
  const child = (await call(app, owner, 'POST', '/api/children', { name: 'Ole', dateOfBirth: '2021-06-01', sex: 'male' })).json()
  await call(app, owner, 'POST', `/api/children/${child.id}/measurements`, { measuredAt: '2024-01-01', weightKg: 15 })
  t.equal((await call(app, owner, 'GET', `/api/children/${child.id}/growth`)).statusCode, 503)
  t.equal((await call(app, owner, 'GET', `/api/children/${child.id}/growth?reference=auto`)).statusCode, 503)
  const cdc = await call(app, owner, 'GET', `/api/children/${child.id}/growth?reference=cdc`)
  t.equal(cdc.statusCode, 200)
  t.equal(cdc.json().points[0].weightForAge.reference, 'cdc-2000')
  const curve = await call(app, owner, 'GET', '/api/growth-standards/weight-for-age?sex=male&reference=cdc')
  t.equal(curve.statusCode, 200)
  t.equal(curve.json().source, 'CDC 2000 growth charts')
  t.ok(curve.json().points.every((p: any) => p.reference.startsWith('cdc-2000')), 'CDC\'s curve')
  t.equal((await call(app, owner, 'GET', '/api/growth-standards/weight-for-age?sex=male')).statusCode, 503)
  t.equal((await call(app, owner, 'GET', '/api/growth-standards/weight-for-age?sex=male&reference=who-2006')).statusCode, 400)
})
