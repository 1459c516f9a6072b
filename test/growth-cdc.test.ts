import t from 'tap'
import { createHash } from 'node:crypto'
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { CDC_DIR, loadCdcTables, readCdcTables } from '../io/growth-cdc'
import { CDC_FILES, CDC_TABLE_NAMES, cdcLms, parseCdcTable, type CdcTableName, type CdcTables } from '../lib/growth/cdc'
import { CDC_CHARTS, cdcAgeScore, cdcChartScore, cdcWeightForLengthScore } from '../lib/growth/cdc-scores'
import { chartsFor, growthSource, scoresAt, scoresWithCdc, type GrowthReference } from '../lib/growth/charts'
import { childGrowth } from '../lib/growth/child'
import { INDICATORS, referenceCurve, type Indicator } from '../lib/growth/curves'
import { readTableFiles } from '../outbound/growth-tables'
import { growthPoint, type GrowthChild, type GrowthMeasurement, type GrowthPoint } from '../lib/growth/point'
import { ageScore, type AgeIndicator } from '../lib/growth/scores'
import { parseTables, type GrowthTables } from '../lib/growth/tables'
import { csvRows, dayAfter, lmsAt, MONTH, round, scoreByHand, SHIPPED, valueAt, valueAtModifiedZ, type CsvRow, type Sex } from './cdc-by-hand'
import { growthDir } from './helper'

/** CDC's cut-offs for biologically implausible values, on the modified z-score. */
const CUT_OFFS = {
  weightForAge: [-5, 8], heightForAge: [-5, 4], weightForHeight: [-4, 8], bmiForAge: [-4, 8], headCircumferenceForAge: [-5, 5]
} as const

/** Each file: the chart it is, the score it gives, its reference and its rows per sex (growth/cdc/README.md). */
const FILES: Record<string, { name: CdcTableName, indicator: keyof typeof CUT_OFFS, reference: string, rows: number }> = {
  'wtageinf.csv': { name: 'weightForAgeInfant', indicator: 'weightForAge', reference: 'cdc-2000-infant', rows: 38 },
  'lenageinf.csv': { name: 'lengthForAgeInfant', indicator: 'heightForAge', reference: 'cdc-2000-infant', rows: 37 },
  'hcageinf.csv': { name: 'headCircumferenceForAgeInfant', indicator: 'headCircumferenceForAge', reference: 'cdc-2000-infant', rows: 38 },
  'wtleninf.csv': { name: 'weightForLengthInfant', indicator: 'weightForHeight', reference: 'cdc-2000-infant', rows: 60 },
  'wtage.csv': { name: 'weightForAge', indicator: 'weightForAge', reference: 'cdc-2000', rows: 218 },
  'statage.csv': { name: 'statureForAge', indicator: 'heightForAge', reference: 'cdc-2000', rows: 218 },
  'bmiagerev.csv': { name: 'bmiForAge', indicator: 'bmiForAge', reference: 'cdc-2000', rows: 219 }
}

let cdc: CdcTables
let who: GrowthTables

t.before(async () => {
  cdc = loadCdcTables()
  const { files, failed } = await readTableFiles(growthDir())
  if (failed.size > 0) throw new Error(`WHO tables refused: ${[...failed.values()].join('; ')}`)
  who = parseTables(files)
})

function measurement (values: Partial<GrowthMeasurement>): GrowthMeasurement {
  return { id: 1, measuredAt: '2024-01-01', heightCm: null, weightKg: null, headCircumferenceCm: null, ...values }
}

/** A measurement taken `days` after the child's birth. */
function at (child: GrowthChild, days: number, values: Partial<GrowthMeasurement>): GrowthMeasurement {
  return measurement({ measuredAt: dayAfter(child.dateOfBirth, days), ...values })
}

t.test('the shipped files are the pinned ones, found beside the code', async t => {
  t.equal(path.resolve(CDC_DIR), path.resolve(SHIPPED), 'io/growth-cdc finds growth/cdc at ../growth/cdc')
  const sums = readFileSync(path.join(SHIPPED, 'SHA256SUMS'), 'utf8').trim().split('\n').map(line => line.split(/\s+/))
  t.same(Object.fromEntries(sums.map(([sum, file]) => [file, sum])), Object.fromEntries(Object.values(CDC_FILES).map(({ file, sha256 }) => [file, sha256])), 'the code pins the sums of SHA256SUMS')
  for (const [sum, file] of sums) t.equal(createHash('sha256').update(readFileSync(path.join(SHIPPED, file))).digest('hex'), sum, `${file} matches its sum`)
  t.same(Object.fromEntries(CDC_TABLE_NAMES.map(name => [CDC_FILES[name].file, name])), Object.fromEntries(Object.entries(FILES).map(([file, { name }]) => [file, name])))
  t.equal(loadCdcTables(), cdc, 'loaded and parsed once')
})

t.test('a missing, changed or malformed file is refused with an error naming it', async t => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cdc-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  cpSync(SHIPPED, dir, { recursive: true })
  t.ok(readCdcTables(dir), 'an exact copy is read')
  const file = path.join(dir, 'statage.csv')
  const original = readFileSync(file)
  const changed = Buffer.from(original)
  changed[200] = changed[200] === 0x31 ? 0x32 : 0x31
  writeFileSync(file, changed)
  t.throws(() => readCdcTables(dir), /statage\.csv has SHA-256 [0-9a-f]{64}, not the pinned 64168c76/, 'one byte changed')
  t.throws(() => loadCdcTables(dir), /statage\.csv has SHA-256/, 'at start too')
  writeFileSync(file, original)
  rmSync(path.join(dir, 'hcageinf.csv'))
  t.throws(() => readCdcTables(dir), /hcageinf\.csv is missing/, 'a missing file')

  t.throws(() => parseCdcTable('Sex,Age,L,M,S\n1,0,1,2,0.1\n2,0,1,2,0.1', 'x.csv'), /x\.csv: unexpected header/)
  t.throws(() => parseCdcTable('Sex,Agemos,L,M,S\n1,0,1,2,0.1\n3,0,1,2,0.1', 'x.csv'), /x\.csv: line 3 is not a valid row/, 'an unknown sex')
  t.throws(() => parseCdcTable('Sex,Agemos,L,M,S\n1,0,1,2,0.1\n2,0,1,-2,0.1', 'x.csv'), /line 3/, 'M below 0')
  t.throws(() => parseCdcTable('Sex,Agemos,L,M,S\n1,0,1,2,0.1\n2,0,1,2', 'x.csv'), /line 3/, 'a short row')
  t.throws(() => parseCdcTable('Sex,Agemos,L,M,S\n1,0,1,2,0.1\n2,0,x,2,0.1', 'x.csv'), /line 3/, 'not a number')
  t.throws(() => parseCdcTable('Sex,Agemos,L,M,S\n1,1,1,2,0.1\n1,0.5,1,2,0.1\n2,0,1,2,0.1', 'x.csv'), /not in increasing order at 0\.5/)
  t.throws(() => parseCdcTable('Sex,Length,L,M,S\n1,45,1,2,0.1', 'x.csv'), /no rows for sex 2/)
})

t.test('every row of every file, read back at its own key: P3, P50 and P97 at z = −1.881, 0 and 1.881', async t => {
  for (const [file, { name, indicator, reference, rows: perSex }] of Object.entries(FILES)) {
    const rows = csvRows(file)
    t.same([rows.filter(row => row.sex === 'male').length, rows.filter(row => row.sex === 'female').length], [perSex, perSex], `${file}: ${perSex} rows per sex`)
    const wrong: string[] = []
    for (const row of rows) {
      for (const [value, z, percentile] of [[row.p3, -1.881, 3], [row.p50, 0, 50], [row.p97, 1.881, 97]]) {
        const score = cdcChartScore(cdc, CDC_CHARTS[name], row.sex, row.key, value)
        if (score === null || Math.abs(score.z - z) > 0.01 || Math.abs(score.percentile - percentile) > 0.1 || score.reference !== reference || score.flagged) {
          wrong.push(`${row.sex} ${row.key} ${value}: ${JSON.stringify(score)}`)
        }
        // Where the service scores a measurement on this file, the same through its own path.
        const days = row.key * MONTH
        const served = indicator === 'weightForHeight' ? cdcWeightForLengthScore(cdc, row.sex, 100, row.key, value) : cdcAgeScore(cdc, indicator, row.sex, days, value)
        const onThisFile = indicator === 'weightForHeight' || indicator === 'headCircumferenceForAge' || (days < 730.5) === (reference === 'cdc-2000-infant')
        if (onThisFile && (served === null || served.z !== score?.z || served.reference !== reference)) wrong.push(`served ${row.sex} ${row.key}: ${JSON.stringify(served)}`)
      }
    }
    t.same(wrong, [], `${file}: all ${rows.length * 3} values`)
  }
})

t.test('children measured between rows: L, M and S interpolated, scored by CDC\'s LMS formula', async t => {
  const children: Array<{ sex: Sex, days: number, weightKg: number, heightCm: number, headCircumferenceCm: number | null }> = [
    { sex: 'female', days: 100, weightKg: 5.9, heightCm: 60.3, headCircumferenceCm: 39.8 },
    { sex: 'male', days: 400, weightKg: 10.1, heightCm: 77.2, headCircumferenceCm: 46.3 },
    { sex: 'male', days: 725, weightKg: 11.9, heightCm: 86.7, headCircumferenceCm: 48.1 },
    { sex: 'female', days: 1000, weightKg: 14, heightCm: 95.4, headCircumferenceCm: 48.9 },
    { sex: 'male', days: 3700, weightKg: 33, heightCm: 140.2, headCircumferenceCm: null },
    { sex: 'female', days: 7200, weightKg: 58, heightCm: 163, headCircumferenceCm: null },
    { sex: 'male', days: 300, weightKg: 14.2, heightCm: 69.1, headCircumferenceCm: 50.7 }
  ]
  const points: GrowthPoint[] = []
  for (const { sex, days, weightKg, heightCm, headCircumferenceCm } of children) {
    const child = { sex, dateOfBirth: '2004-02-29' }
    const point = growthPoint(null, child, at(child, days, { weightKg, heightCm, headCircumferenceCm }), { reference: 'cdc', cdc })
    points.push(point)
    const months = days / MONTH
    const infant = days < 730.5
    const bmi = weightKg / (heightCm / 100) ** 2
    const expected = (file: string, key: number, value: number | null, indicator: keyof typeof CUT_OFFS) => {
      const lms = lmsAt(csvRows(file), sex, key)
      if (lms === null || value === null) return null
      t.ok(lms.between, `${file} at ${round(key, 3)} lies between two rows`)
      return scoreByHand(value, lms, FILES[file].reference, CUT_OFFS[indicator])
    }
    const label = `${sex} of ${days} days`
    t.same(point.weightForAge, expected(infant ? 'wtageinf.csv' : 'wtage.csv', months, weightKg, 'weightForAge'), `${label}: weight-for-age`)
    t.same(point.heightForAge, expected(infant ? 'lenageinf.csv' : 'statage.csv', months, heightCm, 'heightForAge'), `${label}: length or stature-for-age`)
    t.same(point.headCircumferenceForAge, expected('hcageinf.csv', months, headCircumferenceCm, 'headCircumferenceForAge'), `${label}: head circumference-for-age`)
    t.same(point.bmiForAge, infant ? null : expected('bmiagerev.csv', months, bmi, 'bmiForAge'), `${label}: BMI-for-age`)
    t.same(point.weightForHeight, infant ? expected('wtleninf.csv', heightCm, weightKg, 'weightForHeight') : null, `${label}: weight-for-length`)
  }
  const heavy = points.at(-1)!
  t.ok(heavy.weightForHeight !== null && heavy.weightForHeight.z > 3, `the last one's z is beyond 3 (${heavy.weightForHeight?.z}), where CDC's is not restricted as WHO's is`)
})

t.test('auto: WHO 2006 under 24 months of the scored age, CDC 2000 from exactly 730.5 days', async t => {
  const auto = chartsFor(who, { reference: 'auto', cdc })
  const values = { weightKg: 12.3, heightCm: 87.1, headCircumferenceCm: 48.2, bmi: 12.3 / 0.871 ** 2 }
  t.equal(scoresWithCdc('auto', 730.4999), false)
  t.equal(scoresWithCdc('auto', 730.5), true)
  for (const days of [729.5, 730, 730.4999]) {
    const scores = scoresAt(auto, 'female', days, values)
    t.equal(scores.weightForAge?.reference, 'who-2006', `${days} days: WHO 2006`)
    t.same(scores.weightForAge, ageScore(who, 'weightForAge', 'female', days, values.weightKg), 'as WHO scores it')
  }
  for (const days of [730.5, 731, 731.5]) {
    const scores = scoresAt(auto, 'female', days, values)
    t.same([scores.weightForAge?.reference, scores.heightForAge?.reference, scores.bmiForAge?.reference, scores.headCircumferenceForAge?.reference],
      ['cdc-2000', 'cdc-2000', 'cdc-2000', 'cdc-2000-infant'], `${days} days: CDC 2000 (head circumference on the infant chart)`)
    t.same(scores.weightForAge, cdcAgeScore(cdc, 'weightForAge', 'female', days, values.weightKg), 'as CDC scores it')
    t.equal(scores.weightForHeight, null, 'no weight-for-height from 24 months')
  }

  const term = { sex: 'male', dateOfBirth: '2021-03-01' }
  const day730 = at(term, 730, { weightKg: 12.3, heightCm: 87.1 })
  const day731 = at(term, 731, { weightKg: 12.3, heightCm: 87.1 })
  t.same(growthPoint(who, term, day730, { reference: 'auto', cdc }), growthPoint(who, term, day730), 'at 730 days: exactly WHO\'s point')
  t.same(growthPoint(who, term, day731, { reference: 'auto', cdc }), growthPoint(null, term, day731, { reference: 'cdc', cdc }), 'at 731 days: exactly CDC\'s point')
  t.equal(growthPoint(who, term, day731, { reference: 'auto', cdc }).weightForAge?.reference, 'cdc-2000')

  // Born at 30 weeks: the age is corrected by 70 days until 24 months of chronological age.
  const preterm = { sex: 'male', dateOfBirth: '2021-03-01', gestationalAgeAtBirthWeeks: 30, gestationalAgeAtBirthDays: 0 }
  const late = growthPoint(who, preterm, at(preterm, 730, { weightKg: 11 }), { reference: 'auto', cdc })
  t.equal(late.correctedAgeDays, 660)
  t.same(late.weightForAge, ageScore(who, 'weightForAge', 'male', 660, 11), 'under auto, WHO at the corrected age')
  const after = growthPoint(who, preterm, at(preterm, 731, { weightKg: 11 }), { reference: 'auto', cdc })
  t.same([after.correctedAgeDays, after.weightForAge], [null, cdcAgeScore(cdc, 'weightForAge', 'male', 731, 11)], 'from 24 months chronological, CDC at the chronological age')

  const baby = growthPoint(null, preterm, at(preterm, 400, { weightKg: 8, heightCm: 70, headCircumferenceCm: 44 }), { reference: 'cdc', cdc })
  t.equal(baby.scoredAt, 'corrected')
  t.same(baby.weightForAge, cdcAgeScore(cdc, 'weightForAge', 'male', 330, 8), 'with CDC, scored at the corrected age')
  t.not(baby.weightForAge?.z, cdcAgeScore(cdc, 'weightForAge', 'male', 400, 8)?.z, 'not at the chronological age')
  const nearly2 = growthPoint(null, preterm, at(preterm, 730, { weightKg: 11, heightCm: 84 }), { reference: 'cdc', cdc })
  t.same([nearly2.heightForAge?.reference, nearly2.bmiForAge, nearly2.weightForHeight?.reference], ['cdc-2000-infant', null, 'cdc-2000-infant'], 'the corrected age picks the infant charts')
  t.same(nearly2.heightForAge, cdcAgeScore(cdc, 'heightForAge', 'male', 660, 84))
  const unborn = growthPoint(null, preterm, at(preterm, 20, { weightKg: 1.9 }), { reference: 'cdc', cdc })
  t.equal(unborn.weightForAge, null, 'before the term date nothing is scored')
})

t.test('flagged by CDC\'s cut-offs on the modified z-score', async t => {
  const cases: Array<[string, number]> = [['wtageinf.csv', 6.5], ['lenageinf.csv', 12.5], ['hcageinf.csv', 30.5], ['wtleninf.csv', 80.5], ['wtage.csv', 100.5], ['statage.csv', 150.5], ['bmiagerev.csv', 200.5]]
  for (const [file, key] of cases) {
    const { name, indicator } = FILES[file]
    for (const sex of ['male', 'female'] as const) {
      const lms = lmsAt(csvRows(file), sex, key)!
      const [low, high] = CUT_OFFS[indicator]
      for (const [modified, flagged] of [[low - 0.01, true], [low + 0.01, false], [high - 0.01, false], [high + 0.01, true]] as const) {
        const value = valueAtModifiedZ(lms, modified)
        t.equal(cdcChartScore(cdc, CDC_CHARTS[name], sex, key, value)?.flagged, flagged, `${file} ${sex} at modified z ${modified}`)
      }
    }
  }
  const child = { sex: 'female', dateOfBirth: '2010-01-01' }
  const lms = lmsAt(csvRows('bmiagerev.csv'), 'female', 3000 / MONTH)!
  const bmi = valueAtModifiedZ(lms, 8.05)
  const point = growthPoint(null, child, at(child, 3000, { heightCm: 130, weightKg: bmi * 1.3 ** 2 }), { reference: 'cdc', cdc })
  t.equal(point.bmiForAge?.flagged, true, 'through a growth point')
  t.ok(point.bmiForAge!.z < 5, `although the LMS z is only ${point.bmiForAge?.z}`)
})

t.test('outside a chart: null, no extrapolation', async t => {
  const score = (indicator: AgeIndicator, days: number, value: number | null) => cdcAgeScore(cdc, indicator, 'male', days, value)
  t.ok(score('weightForAge', 240 * MONTH, 70) !== null, 'weight-for-age at 240 months')
  t.equal(score('weightForAge', 240.01 * MONTH, 70), null, 'not after')
  t.ok(score('heightForAge', 240 * MONTH, 175) !== null)
  t.equal(score('heightForAge', 240.01 * MONTH, 175), null)
  t.ok(score('bmiForAge', 240.5 * MONTH, 22) !== null, 'BMI-for-age at 240.5 months')
  t.equal(score('bmiForAge', 240.51 * MONTH, 22), null)
  t.equal(score('bmiForAge', 730, 17), null, 'no BMI-for-age under 24 months')
  t.ok(score('headCircumferenceForAge', 36 * MONTH, 49) !== null, 'head circumference at 36 months')
  t.equal(score('headCircumferenceForAge', 36.01 * MONTH, 49), null)
  t.equal(score('weightForAge', -1, 3), null, 'before birth')
  for (const value of [0, -2, Number.NaN, null]) t.equal(score('weightForAge', 100, value), null, `a weight of ${value}`)
  const wfl = (days: number, lengthCm: number) => cdcWeightForLengthScore(cdc, 'female', days, lengthCm, 9)
  t.ok(wfl(300, 45) !== null && wfl(300, 103.5) !== null, 'weight-for-length from 45 to 103.5 cm')
  t.equal(wfl(300, 44.99), null)
  t.equal(wfl(300, 103.51), null)
  t.equal(wfl(730.5, 80), null, 'not from 24 months')
  const wtleninf = cdc.weightForLengthInfant
  t.equal(cdcLms(wtleninf, 'female', 44.99), null, 'no L, M and S below the first row')
  t.equal(cdcLms(wtleninf, 'female', 103.51), null, 'nor above the last')
  const first = csvRows('wtleninf.csv').find(row => row.sex === 'female')!
  t.same(cdcLms(wtleninf, 'female', 45), { l: first.l, m: first.m, s: first.s }, 'the first row\'s own at its key')
  const other = growthPoint(null, { sex: 'other', dateOfBirth: '2020-01-01' }, measurement({ measuredAt: '2023-01-01', weightKg: 14 }), { reference: 'cdc', cdc })
  t.equal(other.weightForAge, null, 'sex other: no score')
})

t.test('who stays the default and today\'s; the tables a reference needs are checked', async t => {
  const child = { sex: 'female', dateOfBirth: '2018-05-05', gestationalAgeAtBirthWeeks: 34 }
  for (const days of [0, 10, 300, 730, 731, 1500, 1900, 4000, 7000]) {
    const m = at(child, days, { weightKg: 3 + days / 300, heightCm: 50 + days / 60, headCircumferenceCm: 35 + days / 300 })
    t.same(growthPoint(who, child, m, { reference: 'who', cdc }), growthPoint(who, child, m), `${days} days: the same point`)
  }
  t.equal(childGrowth(who, { id: 1, ...child }, []).source, 'WHO Child Growth Standards (2006); WHO Reference 2007')
  const sources: Record<GrowthReference, string> = {
    who: 'WHO Child Growth Standards (2006); WHO Reference 2007',
    cdc: 'CDC 2000 growth charts',
    auto: 'WHO Child Growth Standards (2006); CDC 2000 growth charts'
  }
  for (const [reference, source] of Object.entries(sources) as Array<[GrowthReference, string]>) {
    t.equal(childGrowth(who, { id: 1, ...child }, [], { reference, cdc }).source, source, `${reference} credits ${source}`)
    t.equal(growthSource(reference), source)
  }
  const growth = childGrowth(null, { id: 2, ...child }, [at(child, 900, { weightKg: 13 })], { reference: 'cdc', cdc })
  t.equal(growth.points[0].weightForAge?.reference, 'cdc-2000', 'cdc works without WHO\'s tables')

  t.throws(() => growthPoint(null, child, at(child, 10, {})), /growth reference who needs WHO's growth tables/)
  t.throws(() => childGrowth(null, { id: 1, ...child }, [], { reference: 'auto', cdc }), /growth reference auto needs WHO's growth tables/)
  t.throws(() => childGrowth(who, { id: 1, ...child }, [], { reference: 'auto' }), /growth reference auto needs CDC's growth charts/)
  t.throws(() => growthPoint(who, child, at(child, 10, {}), { reference: 'cdc' }), /growth reference cdc needs CDC's growth charts/)
  t.throws(() => growthPoint(who, child, at(child, 10, {}), { reference: 'nhs' as GrowthReference, cdc }), /unknown growth reference "nhs"/)
})

/** Φ⁻¹ at the 3rd, 15th, 50th, 85th and 97th percentiles. */
const PERCENTILE_Z: Record<string, number> = { 3: -1.880793608151251, 15: -1.0364333894937898, 50: 0, 85: 1.0364333894937898, 97: 1.880793608151251 }

/** A curve point made by hand from a row of a file: x is the row's month × 30.4375 rounded (or its length). */
function pointOf (row: CsvRow, reference: string, byLength = false) {
  const { l, m, s } = row
  return {
    x: byLength ? row.key : Math.floor(row.key * MONTH + 0.5),
    reference,
    l,
    m,
    s,
    sd: Object.fromEntries([-3, -2, -1, 0, 1, 2, 3].map(k => [String(k), round(valueAt(row, k), 4)])),
    percentile: Object.fromEntries(Object.entries(PERCENTILE_Z).map(([p, z]) => [p, round(valueAt(row, z), 4)]))
  }
}

const rowsOf = (file: string, sex: Sex, keep: (key: number) => boolean = () => true) => csvRows(file).filter(row => row.sex === sex && keep(row.key))

t.test('CDC\'s curves: a point at each of its rows, the infant charts under 24 months and the 2–20 ones from then', async t => {
  const curve = (indicator: Indicator, sex: Sex, reference: GrowthReference, range = {}) => referenceCurve(reference === 'cdc' ? null : who, indicator, sex, range, { reference, cdc })
  t.same(curve('weight-for-age', 'male', 'cdc').points, [
    ...rowsOf('wtageinf.csv', 'male', key => key < 24).map(row => pointOf(row, 'cdc-2000-infant')),
    ...rowsOf('wtage.csv', 'male').map(row => pointOf(row, 'cdc-2000'))
  ], 'weight-for-age: wtageinf to 23.5 months, then wtage from 24')
  t.same(curve('height-for-age', 'female', 'cdc').points, [
    ...rowsOf('lenageinf.csv', 'female', key => key < 24).map(row => pointOf(row, 'cdc-2000-infant')),
    ...rowsOf('statage.csv', 'female').map(row => pointOf(row, 'cdc-2000'))
  ], 'length, then stature')
  t.same(curve('head-circumference-for-age', 'female', 'cdc').points, rowsOf('hcageinf.csv', 'female').map(row => pointOf(row, 'cdc-2000-infant')), 'head circumference to 36 months')
  t.same(curve('bmi-for-age', 'male', 'cdc').points, rowsOf('bmiagerev.csv', 'male').map(row => pointOf(row, 'cdc-2000')), 'BMI from 24 months')
  const wfl = curve('weight-for-length', 'male', 'cdc')
  t.same([wfl.x, wfl.unit, wfl.points], ['heightCm', 'kg', rowsOf('wtleninf.csv', 'male').map(row => pointOf(row, 'cdc-2000-infant', true))], 'weight-for-length, 45 to 103.5 cm')
  t.same(curve('weight-for-height', 'male', 'cdc').points, [], 'no weight-for-height')

  const whoWeight = referenceCurve(who, 'weight-for-age', 'female').points
  t.same(curve('weight-for-age', 'female', 'auto').points, [
    ...whoWeight.filter(point => point.x <= 730),
    ...rowsOf('wtage.csv', 'female').map(row => pointOf(row, 'cdc-2000'))
  ], 'auto: WHO 2006 by day to 730 days, then CDC from 24 months')
  t.same(curve('head-circumference-for-age', 'male', 'auto').points, [
    ...referenceCurve(who, 'head-circumference-for-age', 'male').points.filter(point => point.x <= 730),
    ...rowsOf('hcageinf.csv', 'male', key => key >= 24).map(row => pointOf(row, 'cdc-2000-infant'))
  ], 'auto: head circumference on CDC\'s infant chart from 24 to 36 months')
  t.same(curve('weight-for-length', 'female', 'auto').points, referenceCurve(who, 'weight-for-length', 'female').points, 'auto: WHO\'s weight-for-length, scored under 24 months')
  t.same(curve('weight-for-height', 'female', 'auto').points, [])

  t.same(curve('weight-for-age', 'male', 'cdc', { from: 700, to: 800 }).points.map(point => [point.x, point.reference]),
    [[715, 'cdc-2000-infant'], [731, 'cdc-2000'], [746, 'cdc-2000'], [776, 'cdc-2000']], 'from and to in days')
  t.same(curve('bmi-for-age', 'male', 'cdc', { to: 900, step: 60 }).points.map(point => point.x), [731, 807, 867], 'step thins the points of a chart')

  for (const indicator of INDICATORS) {
    t.same(referenceCurve(who, indicator, 'female', {}, { reference: 'who', cdc }), referenceCurve(who, indicator, 'female'), `who: ${indicator} as today`)
  }
  t.throws(() => referenceCurve(null, 'weight-for-age', 'male'), /needs WHO's growth tables/)
})
