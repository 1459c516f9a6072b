import t from 'tap'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { readTableFiles } from '../outbound/growth-tables'
import { daysBetween, growthPoint, type GrowthMeasurement } from '../lib/growth/point'
import { ageScore, weightForHeightScore, type AgeIndicator } from '../lib/growth/scores'
import { parseTable, parseTables, type GrowthTables, type Sex } from '../lib/growth/tables'
import { growthDir } from './helper'

// The WHO tables are read at run time from the run's table folder (see test/setup/growth.ts); no value of theirs is written here.
const TABLES = growthDir()
const MONTH = 30.4375

interface Lms { l: number; m: number; s: number }

const texts = new Map<string, string[][]>()

/** A row of a WHO table as the file has it, read by hand. */
function row (file: string, sex: Sex, key: number): Lms & { lorh?: string } {
  if (!texts.has(file)) {
    texts.set(file, readFileSync(path.join(TABLES, file), 'utf8').split('\r\n').slice(1).map(line => line.split('\t')))
  }
  const code = sex === 'male' ? '1' : '2'
  const cells = texts.get(file)!.find(cells => cells[0] === code && Math.abs(Number(cells[1]) - key) < 1e-9)
  if (cells === undefined) throw new Error(`no row ${sex} ${key} in ${file}`)
  return { l: Number(cells[2]), m: Number(cells[3]), s: Number(cells[4]), lorh: cells[5] }
}

function between (a: Lms, b: Lms, share: number): Lms {
  return { l: a.l + share * (b.l - a.l), m: a.m + share * (b.m - a.m), s: a.s + share * (b.s - a.s) }
}

const zOf = (x: number, { l, m, s }: Lms): number => ((x / m) ** l - 1) / (l * s)
const sdOf = ({ l, m, s }: Lms, k: number): number => m * (1 + l * s * k) ** (1 / l)
const round2 = (x: number): number => Math.round(x * 100) / 100

let tables: GrowthTables

t.before(async () => {
  const { files, failed } = await readTableFiles(TABLES)
  if (failed.size > 0) throw new Error(`shared tables refused: ${[...failed.values()].join('; ')}`)
  tables = parseTables(files)
})

function measurement (values: Partial<GrowthMeasurement>): GrowthMeasurement {
  return { id: 1, measuredAt: '2024-01-01', heightCm: null, weightKg: null, headCircumferenceCm: null, ...values }
}

const score = (indicator: AgeIndicator, sex: Sex, ageDays: number, value: number) => ageScore(tables, indicator, sex, ageDays, value)

t.test('WHO\'s published examples', async t => {
  const girl = score('weightForAge', 'female', 1522, 17)
  t.match(girl, { z: 0.24, reference: 'who-2006', flagged: false }, 'a girl of 1522 days weighing 17 kg')
  t.ok(girl !== null && girl.percentile >= 59.2 && girl.percentile <= 59.7, 'her percentile is that of a z near 0.24')
  t.equal(score('weightForAge', 'female', 1, 10.37)?.flagged, true, 'a girl of 1 day weighing 10.37 kg is flagged')
  const short = score('heightForAge', 'male', 987, 72.16)
  t.equal(short?.z, -6.09, 'a boy of 987 days standing 72.16 cm')
  t.equal(short?.flagged, true)
  t.equal(score('heightForAge', 'female', 24 * MONTH, 77.5)?.z, -2.55, 'a girl of 24 months (730.5 days, rounded up to 731) 77.5 cm tall')
  t.equal(score('heightForAge', 'male', 9 * MONTH, 60.7)?.z, -5.02, 'a boy of 9 months, 60.7 cm')
  t.equal(score('heightForAge', 'male', 8 * MONTH, 60)?.z, -4.81, 'a boy of 8 months, 60 cm')
  const examples2007 = [
    { months: 60.32, heightCm: 113.8, weightKg: 18.7, z: { weightForAge: 0.21, bmiForAge: -0.58, heightForAge: 0.96 } },
    { months: 60.911701, heightCm: 113.6, weightKg: 20.5, z: { weightForAge: 0.79, bmiForAge: 0.42, heightForAge: 0.85 } }
  ]
  for (const { months, heightCm, weightKg, z } of examples2007) {
    const days = months * MONTH
    t.equal(score('weightForAge', 'female', days, weightKg)?.z, z.weightForAge, `WHO 2007 weight-for-age, girl of ${months} months`)
    t.equal(score('bmiForAge', 'female', days, weightKg / (heightCm / 100) ** 2)?.z, z.bmiForAge, 'BMI-for-age')
    t.equal(score('heightForAge', 'female', days, heightCm)?.z, z.heightForAge, 'height-for-age')
    t.equal(score('heightForAge', 'female', days, heightCm)?.reference, 'who-2007')
  }
})

t.test('a growth point has the shape of the contract', async t => {
  const point = growthPoint(tables, { sex: 'female', dateOfBirth: '2023-03-01' },
    measurement({ id: 31, measuredAt: '2023-09-01', heightCm: 66.1, weightKg: 7.6, headCircumferenceCm: 42.4 }))
  t.same(Object.keys(point), [
    'measurementId', 'measuredAt', 'ageDays', 'ageMonths', 'correctedAgeDays', 'scoredAt', 'heightCm', 'weightKg', 'headCircumferenceCm', 'bmi',
    'weightForAge', 'heightForAge', 'headCircumferenceForAge', 'bmiForAge', 'weightForHeight'
  ])
  t.match(point, { measurementId: 31, measuredAt: '2023-09-01', ageDays: 184, ageMonths: 6.05, correctedAgeDays: null, scoredAt: 'chronological', heightCm: 66.1, weightKg: 7.6, headCircumferenceCm: 42.4, bmi: 17.39 })
  const weight = row('weianthro.txt', 'female', 184)
  t.same(point.weightForAge, { z: round2(zOf(7.6, weight)), percentile: point.weightForAge?.percentile, reference: 'who-2006', flagged: false })
  t.equal(point.headCircumferenceForAge?.z, round2(zOf(42.4, row('hcanthro.txt', 'female', 184))))
  t.equal(point.bmiForAge?.z, round2(zOf(7.6 / 0.661 ** 2, row('bmianthro.txt', 'female', 184))), 'BMI-for-age uses the unrounded BMI')
  t.equal(point.weightForHeight?.z, round2(zOf(7.6, row('wflanthro.txt', 'female', 66.1))), 'weight-for-length at 66.1 cm')
})

t.test('ages are whole days between calendar dates, without time zones', async t => {
  t.equal(daysBetween('2024-02-28', '2024-03-01'), 2, 'across a leap day')
  t.equal(daysBetween('2023-03-25', '2023-03-27'), 2, 'across a daylight-saving change')
  t.equal(daysBetween('2019-06-30', '2024-06-30'), 1827)
  const before = growthPoint(tables, { sex: 'male', dateOfBirth: '2024-01-10' }, measurement({ measuredAt: '2024-01-09', weightKg: 3.2, heightCm: 50 }))
  t.equal(before.ageDays, -1)
  t.equal(before.weightForAge, null, 'no score before birth')
  t.equal(before.weightForHeight, null)
})

t.test('length before 731 days, height from 731 days', async t => {
  const at730 = row('lenanthro.txt', 'male', 730)
  const at731 = row('lenanthro.txt', 'male', 731)
  t.equal(at730.lorh, 'L')
  t.equal(at731.lorh, 'H')
  t.equal(score('heightForAge', 'male', 730, 86)?.z, round2(zOf(86, at730)))
  t.equal(score('heightForAge', 'male', 731, 86)?.z, round2(zOf(86, at731)))

  const wfl = row('wflanthro.txt', 'male', 86)
  const wfh = row('wfhanthro.txt', 'male', 86)
  t.equal(weightForHeightScore(tables, 'male', 730, 86, 12)?.z, round2(zOf(12, wfl)), 'weight-for-length at 730 days')
  t.equal(weightForHeightScore(tables, 'male', 731, 86, 12)?.z, round2(zOf(12, wfh)), 'weight-for-height at 731 days')
  t.not(round2(zOf(12, wfl)), round2(zOf(12, wfh)), 'the two references differ there')
})

t.test('weight-for-length covers 45 to 110 cm, weight-for-height 65 to 120 cm', async t => {
  const wfh = (ageDays: number, heightCm: number, weightKg = 10) => weightForHeightScore(tables, 'female', ageDays, heightCm, weightKg)
  for (const [ageDays, file, heightCm] of [[730, 'wflanthro.txt', 45], [730, 'wflanthro.txt', 110], [731, 'wfhanthro.txt', 65], [731, 'wfhanthro.txt', 120]] as const) {
    const lms = row(file, 'female', heightCm)
    t.equal(wfh(ageDays, heightCm, lms.m * 1.1)?.z, round2(zOf(lms.m * 1.1, lms)), `${heightCm} cm at ${ageDays} days`)
  }
  t.equal(wfh(730, 44.99), null)
  t.equal(wfh(730, 110.01), null)
  t.equal(wfh(730, 115), null, 'a length above 110 cm is outside weight-for-length, even though weight-for-height has it')
  t.equal(wfh(731, 64.99), null)
  t.equal(wfh(731, 120.01), null)
  t.equal(wfh(731, 60), null, 'a height below 65 cm is outside weight-for-height, even though weight-for-length has it')
})

t.test('weight-for-length/height interpolates between its 0.1 cm rows', async t => {
  const low = row('wflanthro.txt', 'male', 80.2)
  const high = row('wflanthro.txt', 'male', 80.3)
  t.equal(weightForHeightScore(tables, 'male', 400, 80.25, 10.4)?.z, round2(zOf(10.4, between(low, high, 0.5))))
  t.equal(weightForHeightScore(tables, 'male', 400, 80.27, 10.4)?.z, round2(zOf(10.4, between(low, high, 0.7))))
  t.equal(weightForHeightScore(tables, 'male', 400, 80.2, 10.4)?.z, round2(zOf(10.4, low)), 'a whole row needs no interpolation')
  const h1 = row('wfhanthro.txt', 'female', 99.9)
  const h2 = row('wfhanthro.txt', 'female', 100)
  t.equal(weightForHeightScore(tables, 'female', 1200, 99.96, 15)?.z, round2(zOf(15, between(h1, h2, 0.6))))
})

t.test('WHO 2006 under 60 months, WHO 2007 from 60 months', async t => {
  const point = (ageDays: number) => growthPoint(tables, { sex: 'female', dateOfBirth: '2020-01-01' },
    measurement({ measuredAt: new Date(Date.UTC(2020, 0, 1 + ageDays)).toISOString().slice(0, 10), heightCm: 108, weightKg: 18, headCircumferenceCm: 50 }))
  const last2006 = point(1826)
  t.equal(last2006.ageDays, 1826)
  t.equal(last2006.ageMonths, 59.99)
  t.equal(last2006.weightForAge?.reference, 'who-2006')
  t.equal(last2006.weightForAge?.z, round2(zOf(18, row('weianthro.txt', 'female', 1826))))
  t.equal(last2006.heightForAge?.z, round2(zOf(108, row('lenanthro.txt', 'female', 1826))))
  t.equal(last2006.headCircumferenceForAge?.z, round2(zOf(50, row('hcanthro.txt', 'female', 1826))))
  t.equal(last2006.bmiForAge?.z, round2(zOf(18 / 1.08 ** 2, row('bmianthro.txt', 'female', 1826))))
  t.equal(last2006.weightForHeight?.z, round2(zOf(18, row('wfhanthro.txt', 'female', 108))))

  const first2007 = point(1827)
  const months = 1827 / MONTH
  const share = months - 60
  t.equal(first2007.ageMonths, 60.02)
  t.equal(first2007.weightForAge?.reference, 'who-2007')
  t.equal(first2007.weightForAge?.z, round2(zOf(18, between(row('wfawho2007.txt', 'female', 60), row('wfawho2007.txt', 'female', 61), share))))
  t.equal(first2007.heightForAge?.z, round2(zOf(108, between(row('hfawho2007.txt', 'female', 60), row('hfawho2007.txt', 'female', 61), share))))
  t.equal(first2007.bmiForAge?.z, round2(zOf(18 / 1.08 ** 2, between(row('bfawho2007.txt', 'female', 60), row('bfawho2007.txt', 'female', 61), share))))
  t.equal(first2007.headCircumferenceForAge, null, 'head circumference has no reference from 60 months')
  t.equal(first2007.weightForHeight, null, 'weight-for-height has no reference from 60 months')

  t.equal(score('heightForAge', 'male', 60 * MONTH, 110)?.z, round2(zOf(110, row('hfawho2007.txt', 'male', 60))), 'exactly 60 months uses the month-60 row')
})

t.test('WHO 2007 weight-for-age ends at 120 months, height and BMI at 228 months', async t => {
  const weight = row('wfawho2007.txt', 'male', 120)
  const before = row('wfawho2007.txt', 'male', 119)
  t.equal(score('weightForAge', 'male', 3652, 30)?.z, round2(zOf(30, between(before, weight, 3652 / MONTH - 119))), '3652 days')
  t.equal(score('weightForAge', 'male', 120 * MONTH, 30)?.z, round2(zOf(30, weight)), 'exactly 120 months')
  t.equal(score('weightForAge', 'male', 3653, 30), null, '3653 days is past 120 months')
  t.equal(score('heightForAge', 'male', 3653, 140)?.reference, 'who-2007', 'height-for-age goes on')
  t.equal(score('bmiForAge', 'male', 3653, 17)?.reference, 'who-2007', 'BMI-for-age goes on')

  const height = between(row('hfawho2007.txt', 'female', 227), row('hfawho2007.txt', 'female', 228), 6939 / MONTH - 227)
  t.equal(score('heightForAge', 'female', 6939, 160)?.z, round2(zOf(160, height)), '6939 days')
  t.equal(score('heightForAge', 'female', 228 * MONTH, 160)?.z, round2(zOf(160, row('hfawho2007.txt', 'female', 228))), 'exactly 228 months')
  t.equal(score('heightForAge', 'female', 6940, 160), null, '6940 days is past 228 months')
  t.equal(score('bmiForAge', 'female', 6939, 21)?.reference, 'who-2007')
  t.equal(score('bmiForAge', 'female', 6940, 21), null)
})

t.test('beyond ±3 the restricted z-score applies to weight, BMI and weight-for-height', async t => {
  const lms = row('weianthro.txt', 'male', 300)
  const sd2 = sdOf(lms, 2)
  const sd3 = sdOf(lms, 3)
  const heavy = sd3 + 0.5 * (sd3 - sd2)
  t.equal(score('weightForAge', 'male', 300, heavy)?.z, 3.5, 'above +3: 3 + (X − SD3)/(SD3 − SD2)')
  t.not(round2(zOf(heavy, lms)), 3.5, 'which is not the plain LMS z')

  const sdMinus2 = sdOf(lms, -2)
  const sdMinus3 = sdOf(lms, -3)
  const light = sdMinus3 - 0.25 * (sdMinus2 - sdMinus3)
  t.equal(score('weightForAge', 'male', 300, light)?.z, -3.25, 'below −3: −3 + (X − SD−3)/(SD−2 − SD−3)')
  t.not(round2(zOf(light, lms)), -3.25)

  const bmi = between(row('bfawho2007.txt', 'female', 100), row('bfawho2007.txt', 'female', 101), 3050 / MONTH - 100)
  const bmiSd3 = sdOf(bmi, 3)
  t.equal(score('bmiForAge', 'female', 3050, bmiSd3 + 1.2 * (bmiSd3 - sdOf(bmi, 2)))?.z, 4.2, 'BMI-for-age, WHO 2007')

  const wfh = row('wfhanthro.txt', 'male', 90)
  const wfhMinus3 = sdOf(wfh, -3)
  t.equal(weightForHeightScore(tables, 'male', 1000, 90, wfhMinus3 - 0.4 * (sdOf(wfh, -2) - wfhMinus3))?.z, -3.4, 'weight-for-height')

  const length = row('lenanthro.txt', 'male', 300)
  t.equal(score('heightForAge', 'male', 300, sdOf(length, 3.5))?.z, 3.5, 'height-for-age keeps the plain z')
  const head = row('hcanthro.txt', 'male', 300)
  t.equal(score('headCircumferenceForAge', 'male', 300, sdOf(head, -3.7))?.z, -3.7, 'so does head circumference')
})

t.test('the percentile is 100 Φ(z) of the unrounded z, with one decimal', async t => {
  const lms = row('weianthro.txt', 'female', 500)
  const at = (k: number) => score('weightForAge', 'female', 500, sdOf(lms, k))
  t.same(at(0), { z: 0, percentile: 50, reference: 'who-2006', flagged: false })
  t.equal(at(1)?.percentile, 84.1)
  t.equal(at(2)?.percentile, 97.7)
  t.equal(at(-1.88)?.percentile, 3)
  t.equal(at(-0.5)?.percentile, 30.9)
  const near = at(0.2549)
  t.equal(near?.z, 0.25)
  t.equal(near?.percentile, 60.1, 'from z = 0.2549, where the rounded z would give 59.9')
  t.equal(at(-4)?.percentile, 0)
})

t.test('implausible values are flagged as WHO flags them', async t => {
  const weight = row('weianthro.txt', 'male', 200)
  const restricted = (k: number) => k > 0
    ? sdOf(weight, 3) + (k - 3) * (sdOf(weight, 3) - sdOf(weight, 2))
    : sdOf(weight, -3) + (k + 3) * (sdOf(weight, -2) - sdOf(weight, -3))
  t.equal(score('weightForAge', 'male', 200, restricted(5.2))?.flagged, true, 'weight-for-age above 5')
  t.equal(score('weightForAge', 'male', 200, restricted(4.9))?.flagged, false)
  t.equal(score('weightForAge', 'male', 200, restricted(-5.5))?.flagged, false, 'weight-for-age down to −6 is plausible')
  t.equal(score('weightForAge', 'male', 200, restricted(-6.2))?.flagged, true)

  const height = row('lenanthro.txt', 'male', 200)
  t.equal(score('heightForAge', 'male', 200, sdOf(height, 5.5))?.flagged, false, 'height-for-age up to 6 is plausible')
  t.equal(score('heightForAge', 'male', 200, sdOf(height, 6.3))?.flagged, true)
  t.equal(score('heightForAge', 'male', 200, sdOf(height, -6.3))?.flagged, true)

  const head = row('hcanthro.txt', 'male', 200)
  t.equal(score('headCircumferenceForAge', 'male', 200, sdOf(head, 5.3))?.flagged, true, 'head circumference beyond ±5')
  t.equal(score('headCircumferenceForAge', 'male', 200, sdOf(head, -5.3))?.flagged, true)
  t.equal(score('headCircumferenceForAge', 'male', 200, sdOf(head, 4.8))?.flagged, false)

  const bmi = row('bmianthro.txt', 'male', 200)
  const bmiSd3 = sdOf(bmi, 3)
  t.equal(score('bmiForAge', 'male', 200, bmiSd3 + 2.5 * (bmiSd3 - sdOf(bmi, 2)))?.flagged, true, 'BMI beyond ±5')
  t.equal(score('bmiForAge', 'male', 200, bmiSd3 + 1.5 * (bmiSd3 - sdOf(bmi, 2)))?.flagged, false)

  const wfl = row('wflanthro.txt', 'male', 70)
  const wflMinus3 = sdOf(wfl, -3)
  t.equal(weightForHeightScore(tables, 'male', 200, 70, wflMinus3 - 2.5 * (sdOf(wfl, -2) - wflMinus3))?.flagged, true, 'weight-for-length beyond ±5')
  t.equal(weightForHeightScore(tables, 'male', 200, 70, wflMinus3 - 1.5 * (sdOf(wfl, -2) - wflMinus3))?.flagged, false)
})

t.test('a child of sex other gets no scores', async t => {
  const point = growthPoint(tables, { sex: 'other', dateOfBirth: '2023-03-01' },
    measurement({ measuredAt: '2023-09-01', heightCm: 66.1, weightKg: 7.6, headCircumferenceCm: 42.4 }))
  t.match(point, { ageDays: 184, ageMonths: 6.05, bmi: 17.39 })
  t.same([point.weightForAge, point.heightForAge, point.headCircumferenceForAge, point.bmiForAge, point.weightForHeight], [null, null, null, null, null])
})

t.test('missing values give null scores', async t => {
  const point = growthPoint(tables, { sex: 'male', dateOfBirth: '2023-03-01' }, measurement({ measuredAt: '2023-09-01', weightKg: 7.9 }))
  t.equal(point.bmi, null)
  t.ok(point.weightForAge)
  t.same([point.heightForAge, point.headCircumferenceForAge, point.bmiForAge, point.weightForHeight], [null, null, null, null])
  const none = growthPoint(tables, { sex: 'male', dateOfBirth: '2023-03-01' }, measurement({ measuredAt: '2023-09-01' }))
  t.same([none.weightForAge, none.bmi], [null, null])
  t.equal(score('weightForAge', 'male', 100, 0), null, 'a zero value has no score')
  t.equal(growthPoint(tables, { sex: 'female', dateOfBirth: '2000-01-01' }, measurement({ measuredAt: '2024-01-01', weightKg: 60, heightCm: 165 })).heightForAge, null,
    'an adult is outside every reference')
})

t.test('a table that is not a WHO table is refused', async t => {
  t.throws(() => parseTable('sex\tage\tl\tm\n1\t0\t1\t2\r\n', 'odd.txt'), /unexpected header/)
  t.throws(() => parseTable('sex\tage\tl\tm\ts\r\n1\t0\t1\t2\t0.1\r\n1\t2\t1\t2\t0.1\r\n2\t0\t1\t2\t0.1\r\n', 'gap.txt'), /not consecutive/)
  t.throws(() => parseTable('sex\tage\tl\tm\ts\r\n3\t0\t1\t2\t0.1\r\n', 'sex.txt'), /line 2/)
  const parsed = parseTable('sex\tlength\tl\tm\ts\tlorh\r\n1\t45\t1\t2\t0.1\tL\r\n1\t45.1\t1\t3\t0.1\tL\r\n2\t45\t1\t4\t0.1\tL\r\n', 'tiny.txt')
  t.equal(parsed.male.first, 450, 'sizes are keyed by tenths of a cm')
  t.same([...parsed.male.m], [2, 3])
})
