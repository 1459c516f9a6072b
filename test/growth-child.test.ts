import t from 'tap'
import { build, call, register, withoutGrowthTables } from './helper'

const OPEN = { REGISTRATION: 'open' }

function daysBefore (date: string, days: number): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) - days * 86400000).toISOString().slice(0, 10)
}

t.test('a child\'s growth points with WHO scores', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const measured = '2024-05-01'
  const girl = (await call(app, owner, 'POST', '/api/children', { name: 'Gia', dateOfBirth: daysBefore(measured, 1522), sex: 'female' })).json()
  await call(app, owner, 'POST', `/api/children/${girl.id}/measurements`, { measuredAt: measured, weightKg: 17, heightCm: 105 })
  await call(app, owner, 'POST', `/api/children/${girl.id}/measurements`, { measuredAt: daysBefore(measured, 100), headCircumferenceCm: 49.5 })
  await call(app, owner, 'POST', `/api/children/${girl.id}/measurements`, { measuredAt: daysBefore(measured, 1000), weightKg: 9.1 })

  const res = await call(app, owner, 'GET', `/api/children/${girl.id}/growth`)
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.same(Object.keys(body).sort(), ['alerts', 'childId', 'dateOfBirth', 'gestationalAgeAtBirthDays', 'gestationalAgeAtBirthWeeks', 'points', 'reference', 'sex', 'source'])
  t.equal(body.reference, 'who', 'the child\'s chart, WHO\'s by default')
  t.equal(body.source, 'WHO Child Growth Standards (2006); WHO Reference 2007')
  t.equal(body.sex, 'female')
  t.same(body.points.map((p: any) => p.ageDays), [522, 1422, 1522], 'oldest first')
  const last = body.points[2]
  t.equal(last.weightForAge.z, 0.24, 'WHO\'s example: a girl of 1522 days weighing 17 kg')
  t.equal(last.weightForAge.reference, 'who-2006')
  t.equal(last.weightForAge.flagged, false)
  t.ok(Math.abs(last.weightForAge.percentile - 59.5) < 0.6, 'the percentile follows the z-score')
  t.equal(last.ageMonths, Math.round(1522 / 30.4375 * 100) / 100)
  t.equal(last.bmi, Math.round(17 / 1.05 ** 2 * 100) / 100)
  t.ok(last.heightForAge !== null && last.bmiForAge !== null && last.weightForHeight !== null)
  t.equal(last.headCircumferenceForAge, null, 'no value, no score')
  t.equal(body.points[1].weightForAge, null)
  t.ok(body.points[1].headCircumferenceForAge !== null)

  const ranged = (await call(app, owner, 'GET', `/api/children/${girl.id}/growth?from=${daysBefore(measured, 100)}&to=${measured}`)).json()
  t.same(ranged.points.map((p: any) => p.ageDays), [1422, 1522], 'from and to bound measuredAt')
  t.equal((await call(app, owner, 'GET', `/api/children/${girl.id}/growth?from=2024-13-01`)).statusCode, 400)

  const other = (await call(app, owner, 'POST', '/api/children', { name: 'Oz', dateOfBirth: '2022-01-01', sex: 'other' })).json()
  await call(app, owner, 'POST', `/api/children/${other.id}/measurements`, { measuredAt: '2023-01-01', weightKg: 10, heightCm: 75 })
  const point = (await call(app, owner, 'GET', `/api/children/${other.id}/growth`)).json().points[0]
  t.same([point.weightForAge, point.heightForAge, point.headCircumferenceForAge, point.bmiForAge, point.weightForHeight], [null, null, null, null, null], 'sex other: no scores')
  t.equal(point.bmi, 17.78)
})

t.test('growth follows the access rules', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const stranger = await register(app)
  const child = (await call(app, owner, 'POST', '/api/children', { name: 'Kim', dateOfBirth: '2022-01-01', sex: 'male' })).json()
  t.equal((await call(app, stranger, 'GET', `/api/children/${child.id}/growth`)).statusCode, 403)
  t.equal((await call(app, owner, 'GET', '/api/children/999999/growth')).statusCode, 404)
  t.equal((await app.inject({ method: 'GET', url: `/api/children/${child.id}/growth` })).statusCode, 401)
})

t.test('without the reference tables the growth route answers 503 and the rest works', async t => {
  const app = await build(t, { env: { ...OPEN, ...await withoutGrowthTables(t) } })
  await app.growth.loading
  const owner = await register(app)
  const child = (await call(app, owner, 'POST', '/api/children', { name: 'Kim', dateOfBirth: '2022-01-01', sex: 'male' })).json()
  const res = await call(app, owner, 'GET', `/api/children/${child.id}/growth`)
  t.equal(res.statusCode, 503)
  t.equal(res.json().code, 'GROWTH_DATA_MISSING')
  t.match(res.json().error, /GROWTH_DATA_DIR/, 'says how to install them')
  t.equal((await call(app, owner, 'GET', `/api/children/${child.id}/measurements`)).statusCode, 200)
})
