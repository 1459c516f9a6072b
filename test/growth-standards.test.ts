import t, { type Test } from 'tap'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { build, authHeaders, growthDir } from './helper'

// The WHO tables are read at run time from the run's table folder (see test/setup/growth.ts); no value of theirs is written here.
const TABLES = growthDir()
const SOURCE = 'WHO Child Growth Standards (2006); WHO Reference 2007'
const MONTH = 30.4375

/** Φ⁻¹ at the 3rd, 15th, 50th, 85th and 97th percentiles. */
const PERCENTILE_Z: Record<string, number> = { 3: -1.880793608151251, 15: -1.0364333894937898, 50: 0, 85: 1.0364333894937898, 97: 1.880793608151251 }

interface Lms { l: number; m: number; s: number }

/** The rows of one sex of a WHO table, as the file has them. */
function rows (file: string, sex: 'male' | 'female'): Array<Lms & { key: number }> {
  const code = sex === 'male' ? '1' : '2'
  return readFileSync(path.join(TABLES, file), 'utf8').split('\r\n').slice(1)
    .map(line => line.split('\t'))
    .filter(cells => cells[0] === code)
    .map(cells => ({ key: Number(cells[1]), l: Number(cells[2]), m: Number(cells[3]), s: Number(cells[4]) }))
}

const valueAt = ({ l, m, s }: Lms, z: number): number => m * (1 + l * s * z) ** (1 / l)
const round4 = (x: number): number => Math.round(x * 1e4) / 1e4

function isPointOf (t: Test, point: any, lms: Lms, x: number, reference: string): void {
  t.same({ x: point.x, reference: point.reference, l: point.l, m: point.m, s: point.s }, { x, reference, l: lms.l, m: lms.m, s: lms.s }, `the row at x = ${x}`)
  for (const k of [-3, -2, -1, 0, 1, 2, 3]) t.equal(point.sd[String(k)], round4(valueAt(lms, k)), `sd ${k} at x = ${x}`)
  for (const [p, z] of Object.entries(PERCENTILE_Z)) t.equal(point.percentile[p], round4(valueAt(lms, z)), `percentile ${p} at x = ${x}`)
}

async function app (t: Test) {
  return await build(t, { env: { GROWTH_DATA_DIR: TABLES } })
}

async function curve (server: Awaited<ReturnType<typeof app>>, url: string) {
  const res = await server.inject({ method: 'GET', headers: await authHeaders(server), url })
  if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${res.body}`)
  return res.json()
}

t.test('weight-for-age: WHO 2006 by day under 60 months, then WHO 2007 by month to 120 months', async t => {
  const server = await app(t)
  const res = await server.inject({ method: 'GET', headers: await authHeaders(server), url: '/api/growth-standards/weight-for-age?sex=female' })
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.same(Object.keys(body).sort(), ['indicator', 'points', 'sex', 'source', 'unit', 'x'])
  t.match(body, { indicator: 'weight-for-age', sex: 'female', x: 'ageDays', unit: 'kg', source: SOURCE })
  t.same(Object.keys(body.points[0]).sort(), ['l', 'm', 'percentile', 'reference', 's', 'sd', 'x'])

  const days = rows('weianthro.txt', 'female')
  const months = rows('wfawho2007.txt', 'female').filter(row => row.key <= 120)
  t.equal(body.points.length, days.length + months.length, 'every row of both references')
  isPointOf(t, body.points[0], days[0], 0, 'who-2006')
  isPointOf(t, body.points[1826], days[1826], 1826, 'who-2006')
  isPointOf(t, body.points[1827], months[0], 1826, 'who-2007')
  t.equal(120 * MONTH, 3652.5, 'month 120 is at 3652.5 days, rounded up')
  isPointOf(t, body.points.at(-1), months.at(-1)!, 3653, 'who-2007')
  t.equal(months.at(-1)!.key, 120)
  t.equal(body.points.filter((point: any) => point.reference === 'who-2006').length, 1827)
})

t.test('across the 2006/2007 seam, with from and to', async t => {
  const server = await app(t)
  const body = await curve(server, '/api/growth-standards/height-for-age?sex=male&from=1820&to=1900')
  t.same(body.points.map((point: any) => [point.x, point.reference]), [
    [1820, 'who-2006'], [1821, 'who-2006'], [1822, 'who-2006'], [1823, 'who-2006'], [1824, 'who-2006'], [1825, 'who-2006'], [1826, 'who-2006'],
    [1826, 'who-2007'], [1857, 'who-2007'], [1887, 'who-2007']
  ], 'month 60 is at 1826.25 days, month 61 at 1856.69, month 62 at 1887.13')
  const heights = rows('hfawho2007.txt', 'male')
  isPointOf(t, body.points[7], heights[0], 1826, 'who-2007')
  isPointOf(t, body.points[8], heights[1], 1857, 'who-2007')
  isPointOf(t, body.points[6], rows('lenanthro.txt', 'male')[1826], 1826, 'who-2006')

  const whole = await curve(server, '/api/growth-standards/height-for-age?sex=male')
  t.equal(whole.points.at(-1).x, 6940, 'height-for-age ends at 228 months')
  t.equal(whole.points.length, 1827 + 169)
  const bmi = await curve(server, '/api/growth-standards/bmi-for-age?sex=female&from=6900')
  t.equal(bmi.unit, 'kg/m2')
  t.same(bmi.points.map((point: any) => point.x), [6909, 6940], 'BMI-for-age too, at months 227 and 228')
})

t.test('step thins the points of each reference', async t => {
  const server = await app(t)
  const weekly = await curve(server, '/api/growth-standards/weight-for-age?sex=male&from=0&to=70&step=7')
  t.same(weekly.points.map((point: any) => point.x), [0, 7, 14, 21, 28, 35, 42, 49, 56, 63, 70])
  const days = rows('weianthro.txt', 'male')
  isPointOf(t, weekly.points[3], days[21], 21, 'who-2006')

  const yearly = await curve(server, '/api/growth-standards/weight-for-age?sex=male&step=365')
  t.same(yearly.points.map((point: any) => [point.x, point.reference]), [
    [0, 'who-2006'], [365, 'who-2006'], [730, 'who-2006'], [1095, 'who-2006'], [1460, 'who-2006'], [1825, 'who-2006'],
    [1826, 'who-2007'], [2192, 'who-2007'], [2557, 'who-2007'], [2922, 'who-2007'], [3287, 'who-2007'], [3653, 'who-2007']
  ], 'a year apart, each reference from its own first row')

  const sizes = await curve(server, '/api/growth-standards/weight-for-length?sex=female&from=65&to=66&step=0.5')
  t.match(sizes, { indicator: 'weight-for-length', x: 'heightCm', unit: 'kg' })
  t.same(sizes.points.map((point: any) => point.x), [65, 65.5, 66])
  const lengths = rows('wflanthro.txt', 'female')
  isPointOf(t, sizes.points[1], lengths.find(row => row.key === 65.5)!, 65.5, 'who-2006')

  const empty = await curve(server, '/api/growth-standards/weight-for-age?sex=male&from=100&to=50')
  t.same(empty.points, [], 'from after to gives no points')
})

t.test('head circumference and weight-for-length/height have WHO 2006 only', async t => {
  const server = await app(t)
  const head = await curve(server, '/api/growth-standards/head-circumference-for-age?sex=female')
  t.equal(head.unit, 'cm')
  t.equal(head.points.length, 1827)
  t.equal(head.points.at(-1).x, 1826)
  t.ok(head.points.every((point: any) => point.reference === 'who-2006'))

  const length = await curve(server, '/api/growth-standards/weight-for-length?sex=male')
  t.same([length.points.length, length.points[0].x, length.points.at(-1).x], [651, 45, 110])
  const height = await curve(server, '/api/growth-standards/weight-for-height?sex=male')
  t.same([height.points.length, height.points[0].x, height.points.at(-1).x], [551, 65, 120])
  isPointOf(t, height.points[0], rows('wfhanthro.txt', 'male')[0], 65, 'who-2006')

  const female = await curve(server, '/api/growth-standards/weight-for-height?sex=female&from=100&to=100')
  const male = await curve(server, '/api/growth-standards/weight-for-height?sex=male&from=100&to=100')
  t.not(female.points[0].m, male.points[0].m, 'each sex has its own curves')
})

t.test('an unknown indicator or sex, or a bad range, is a 400', async t => {
  const server = await app(t)
  for (const [url, where] of [
    ['/api/growth-standards/length-for-age?sex=female', '/params/indicator'],
    ['/api/growth-standards/weight-for-age?sex=other', '/query/sex'],
    ['/api/growth-standards/weight-for-age?sex=girl', '/query/sex'],
    ['/api/growth-standards/weight-for-age', '/query/sex'],
    ['/api/growth-standards/weight-for-age?sex=female&step=0', '/query/step'],
    ['/api/growth-standards/weight-for-age?sex=female&from=-1', '/query/from'],
    ['/api/growth-standards/weight-for-age?sex=female&to=soon', '/query/to']
  ]) {
    const res = await server.inject({ method: 'GET', headers: await authHeaders(server), url })
    t.equal(res.statusCode, 400, url)
    const body = res.json()
    t.same(Object.keys(body).sort(), ['code', 'details', 'error'])
    t.equal(body.code, 'VALIDATION_ERROR')
    t.equal(body.details.issues[0].path, where)
  }
})

t.test('the OpenAPI document describes the route', async t => {
  const server = await app(t)
  const doc = (await server.inject({ method: 'GET', headers: await authHeaders(server), url: '/api/openapi.json' })).json()
  const operation = doc.paths['/api/growth-standards/{indicator}'].get
  t.equal(operation.operationId, 'getGrowthStandard')
  t.same(operation.tags, ['growth'])
  t.same(operation.security, [{ bearer: [] }])
  t.ok(operation.summary)
  for (const status of ['200', '400', '503']) t.ok(operation.responses[status], `documents ${status}`)
  t.ok(doc.components.schemas.GrowthStandard, 'the curve is a named component')
})

t.test('the reference curves need a signed-in user', async t => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/api/growth-standards/weight-for-age?sex=female' })
  t.equal(res.statusCode, 401)
  t.equal(res.json().code, 'UNAUTHORIZED')
})
