import t from 'tap'
import { readTableFiles } from '../outbound/growth-tables'
import { lmsValue, normalQuantile } from '../lib/growth/lms'
import { growthPoint, type GrowthPoint } from '../lib/growth/point'
import type { Score } from '../lib/growth/scores'
import type { TableName } from '../lib/growth/sources'
import { parseTables, rowAt, type GrowthTables, type Sex } from '../lib/growth/tables'
import { GrowthTrendStream, growthTrends, linesCrossed, type GrowthAlert, type GrowthTrends } from '../lib/growth/trends'
import { growthDir } from './helper'

// The WHO tables are read at run time from the run's table folder; no value of theirs is written here.
let tables: GrowthTables

t.before(async () => {
  const { files, failed } = await readTableFiles(growthDir())
  if (failed.size > 0) throw new Error(`shared tables refused: ${[...failed.values()].join('; ')}`)
  tables = parseTables(files)
})

const DAY_MS = 86_400_000

/** The date `days` after 2024-01-01. */
function dayAfter (days: number, from = '2024-01-01'): string {
  return new Date(Date.parse(`${from}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10)
}

function score (percentile: number, flagged = false): Score {
  return { z: 0, percentile, reference: 'who-2006', flagged }
}

/** A growth point built by hand: only the date, the values and the scores matter here. */
function point (measurementId: number, day: number, fields: Partial<GrowthPoint> = {}): GrowthPoint {
  return {
    measurementId,
    measuredAt: dayAfter(day),
    ageDays: 100 + day,
    ageMonths: 0,
    correctedAgeDays: null,
    scoredAt: 'chronological',
    heightCm: null,
    weightKg: null,
    headCircumferenceCm: null,
    bmi: null,
    weightForAge: null,
    heightForAge: null,
    headCircumferenceForAge: null,
    bmiForAge: null,
    weightForHeight: null,
    ...fields
  }
}

/** The value at a percentile of a WHO 2006 table at an age in days, read from the run's tables. */
function atPercentile (table: TableName, sex: Sex, ageDays: number, percentile: number): number {
  const lms = rowAt(tables[table], sex, ageDays)
  if (lms === null) throw new Error(`no row ${ageDays} in ${table}`)
  return lmsValue(lms, normalQuantile(percentile / 100))
}

t.test('a weight that falls from the 75th to the 10th percentile over four months', async t => {
  const girl = { sex: 'female', dateOfBirth: '2024-01-01' }
  // Measured every three weeks from six months of age.
  const schedule = [
    { id: 1, day: 0, percentile: 75, crossedLines: null },
    { id: 2, day: 21, percentile: 72, crossedLines: null },
    { id: 3, day: 42, percentile: 66, crossedLines: -1 },
    { id: 4, day: 63, percentile: 58, crossedLines: -1 },
    { id: 5, day: 84, percentile: 51, crossedLines: -1 },
    { id: 6, day: 105, percentile: 35, crossedLines: -2 },
    { id: 7, day: 122, percentile: 10, crossedLines: -3 }
  ]
  const points = schedule.map(({ id, day, percentile }) => {
    const measuredAt = dayAfter(day, '2024-07-01')
    const ageDays = 182 + day
    const weightKg = atPercentile('weightForAge2006', 'female', ageDays, percentile)
    return growthPoint(tables, girl, { id, measuredAt, weightKg, heightCm: null, headCircumferenceCm: null })
  })
  t.same(points.map(p => p.weightForAge?.percentile), schedule.map(s => s.percentile), 'the weights score at the planned percentiles')

  const trends = growthTrends(points)
  t.same(trends.points.map(p => p.weightForAge?.crossedLines), schedule.map(s => s.crossedLines),
    'each compared with the first measurement: none before 30 days, the 75th line crossed at once, the 50th at the sixth, the 25th at the last')
  t.same(trends.points.map(p => p.heightForAge), schedule.map(() => null), 'a score with no value stays null')
  t.same(trends.alerts, [
    { measurementId: 6, indicator: 'weightForAge', kind: 'crossing-down' },
    { measurementId: 7, indicator: 'weightForAge', kind: 'crossing-down' }
  ], 'alerts only from the measurement where the second line is crossed')
})

t.test('a child who grows along his centiles', async t => {
  const boy = { sex: 'male', dateOfBirth: '2023-03-01' }
  const points = [0, 30, 61, 92, 120, 151, 181, 212, 240].map((day, index) => {
    const ageDays = 60 + day
    return growthPoint(tables, boy, {
      id: index + 1,
      measuredAt: dayAfter(ageDays, '2023-03-01'),
      weightKg: atPercentile('weightForAge2006', 'male', ageDays, 65),
      heightCm: atPercentile('lengthForAge2006', 'male', ageDays, 55),
      headCircumferenceCm: atPercentile('headCircumferenceForAge2006', 'male', ageDays, 65)
    })
  })
  const trends = growthTrends(points)
  const [first, ...later] = trends.points
  for (const indicator of ['weightForAge', 'heightForAge', 'headCircumferenceForAge', 'bmiForAge', 'weightForHeight'] as const) {
    t.equal(first[indicator]?.crossedLines, null, `${indicator}: nothing before the first measurement`)
    t.same(later.map(p => p[indicator]?.crossedLines), later.map(() => 0), `${indicator}: no line crossed`)
  }
  t.same(trends.alerts, [], 'no alert')
  t.ok(later.every(p => p.velocity !== null && p.velocity.weightKgPerMonth! > 0 && p.velocity.heightCmPerMonth! > 0), 'he grows')
})

t.test('velocity', async t => {
  const given = [
    point(1, 0, { weightKg: 5.0, heightCm: 58.0, headCircumferenceCm: 39.0 }),
    point(2, 10, { weightKg: 5.3, heightCm: 58.6 }),
    point(3, 28, { weightKg: 5.9, heightCm: 60.4, headCircumferenceCm: 40.1 }),
    point(4, 41, { weightKg: 6.2, heightCm: 61.0, headCircumferenceCm: 40.5 }),
    point(5, 55, { weightKg: 6.1, heightCm: 61.5, headCircumferenceCm: 41.2 }),
    point(6, 90, { heightCm: 63.0 }),
    point(7, 130, { weightKg: 7.0, heightCm: 65.0 })
  ]
  const velocities = growthTrends(given).points.map(p => p.velocity)
  t.equal(velocities[0], null, 'no earlier measurement')
  t.equal(velocities[1], null, 'the only earlier measurement is 10 days before')
  t.same(velocities[2], {
    weightKgPerMonth: 1.01, // 0.6 kg × 30.4375 / 18 days = 1.0146
    heightCmPerMonth: 3.04, // 1.8 cm × 30.4375 / 18 = 3.0438
    headCircumferenceCmPerMonth: null, // the measurement 18 days before has none, though the one 28 days before has
    sinceDays: 18
  }, 'from the latest measurement at least 14 days before, not the older one with every value')
  t.same(velocities[3], {
    weightKgPerMonth: 0.88, // 0.9 × 30.4375 / 31 = 0.8837
    heightCmPerMonth: 2.36, // 2.4 × 30.4375 / 31 = 2.3565
    headCircumferenceCmPerMonth: null,
    sinceDays: 31
  }, 'the measurement 13 days before is skipped')
  t.same(velocities[4], {
    weightKgPerMonth: -0.22, // −0.1 × 30.4375 / 14 = −0.2174
    heightCmPerMonth: 1.09, // 0.5 × 30.4375 / 14 = 1.0871
    headCircumferenceCmPerMonth: 1.52, // 0.7 × 30.4375 / 14 = 1.5219
    sinceDays: 14
  }, 'exactly 14 days before counts; a loss is negative')
  t.same(velocities[5], {
    weightKgPerMonth: null, // not measured this time
    heightCmPerMonth: 1.3, // 1.5 × 30.4375 / 35 = 1.3045
    headCircumferenceCmPerMonth: null,
    sinceDays: 35
  })
  t.same(velocities[6], {
    weightKgPerMonth: null, // not measured the time before
    heightCmPerMonth: 1.52, // 2 × 30.4375 / 40 = 1.5219
    headCircumferenceCmPerMonth: null,
    sinceDays: 40
  })

  // 2 × 30.4375 / 487 days is exactly 0.125.
  const halves = growthTrends([point(1, 0, { heightCm: 60, weightKg: 10 }), point(2, 487, { heightCm: 62, weightKg: 8 })]).points[1].velocity
  t.same([halves?.heightCmPerMonth, halves?.weightKgPerMonth], [0.13, -0.13], 'rounded to 2 decimals, halves away from zero')
  const empty = growthTrends([point(1, 0), point(2, 20)]).points[1].velocity
  t.same(empty, { weightKgPerMonth: null, heightCmPerMonth: null, headCircumferenceCmPerMonth: null, sinceDays: 20 }, 'an earlier measurement with no value in common')
})

t.test('a line exactly at a percentile counts as at or above it', async t => {
  t.equal(linesCrossed(50, 49.9), -1, 'from the line to below it')
  t.equal(linesCrossed(49.9, 50), 1, 'from below onto the line')
  t.equal(linesCrossed(50.1, 50), 0, 'from above onto the line')
  t.equal(linesCrossed(50, 50.1), 0)
  t.equal(linesCrossed(50, 50), 0)
  t.equal(linesCrossed(75, 10), -3, '75th to 10th: the 75th, 50th and 25th lines')
  t.equal(linesCrossed(10, 75), 3)
  t.equal(linesCrossed(2.9, 97), 7, 'every line')
  t.equal(linesCrossed(97, 2.9), -7)
  t.equal(linesCrossed(0, 100), 7)
  t.equal(linesCrossed(97.1, 97), 0)
  t.equal(linesCrossed(3, 2.9), -1)
  t.equal(linesCrossed(60, 70), 0, 'between two lines')

  const trends = growthTrends([
    point(1, 0, { weightForAge: score(50), heightForAge: score(49.9), headCircumferenceForAge: score(50.1) }),
    point(2, 40, { weightForAge: score(49.9), heightForAge: score(50), headCircumferenceForAge: score(50) })
  ])
  const last = trends.points[1]
  t.same([last.weightForAge?.crossedLines, last.heightForAge?.crossedLines, last.headCircumferenceForAge?.crossedLines], [-1, 1, 0], 'on the points')
})

t.test('crossedLines compares with the earliest measurement 30 days to 6 months before', async t => {
  const window = growthTrends([
    point(1, 0, { weightForAge: score(95) }),
    point(2, 190, { weightForAge: score(60) }),
    point(3, 250, { weightForAge: score(40) }),
    point(4, 300, { weightForAge: score(45) })
  ]).points.map(p => p.weightForAge?.crossedLines)
  t.equal(window[1], null, 'the only earlier measurement is 190 days before')
  t.equal(window[2], -1, 'the measurement 60 days before')
  t.equal(window[3], -1, 'the earliest in the window (110 days before, 60th), not the latest (50 days before, 40th: 0) nor one outside it (300 days before, 95th: -3)')

  const edges = growthTrends([
    point(1, 0, { weightForAge: score(60) }),
    point(2, 29, { weightForAge: score(40) }),
    point(3, 30, { weightForAge: score(40) }),
    point(4, 182, { weightForAge: score(40) }),
    point(5, 183, { weightForAge: score(40) })
  ]).points.map(p => p.weightForAge?.crossedLines)
  t.equal(edges[1], null, '29 days before is too recent')
  t.equal(edges[2], -1, '30 days before counts')
  t.equal(edges[3], -1, '182 days before is within 6 × 30.4375 days')
  t.equal(edges[4], 0, '183 days before is not: the earliest in the window is then the one 154 days before')

  const indicators = growthTrends([
    point(1, 0, { weightForAge: score(60) }),
    point(2, 20, { headCircumferenceForAge: score(50) }),
    point(3, 60, { weightForAge: score(20), headCircumferenceForAge: score(20) })
  ]).points[2]
  t.equal(indicators.weightForAge?.crossedLines, -2, 'weight from the measurement 60 days before')
  t.equal(indicators.headCircumferenceForAge?.crossedLines, -2, 'head circumference from the earliest measurement that has it, 40 days before')
  t.equal(indicators.heightForAge, null)
})

t.test('alerts: crossings and flagged values, oldest first', async t => {
  const given = [
    point(5, 60, { headCircumferenceForAge: score(60), weightForHeight: score(55, true) }),
    point(3, 60, { weightForAge: score(20, true) }),
    point(8, 0, { weightForAge: score(95), heightForAge: score(10, true), headCircumferenceForAge: score(5), bmiForAge: score(99, true) }),
    point(9, 100, { weightForAge: score(50), heightForAge: score(60) })
  ]
  const before = structuredClone(given)
  const trends = growthTrends(given)
  t.same(trends.points.map(p => p.measurementId), [8, 3, 5, 9], 'by date, then measurement id')
  const expected: GrowthAlert[] = [
    { measurementId: 8, indicator: 'heightForAge', kind: 'flagged' },
    { measurementId: 8, indicator: 'bmiForAge', kind: 'flagged' },
    { measurementId: 3, indicator: 'weightForAge', kind: 'crossing-down' },
    { measurementId: 3, indicator: 'weightForAge', kind: 'flagged' },
    { measurementId: 5, indicator: 'headCircumferenceForAge', kind: 'crossing-up' },
    { measurementId: 5, indicator: 'weightForHeight', kind: 'flagged' },
    { measurementId: 9, indicator: 'weightForAge', kind: 'crossing-down' },
    { measurementId: 9, indicator: 'heightForAge', kind: 'crossing-up' }
  ]
  t.same(trends.alerts, expected, 'within a measurement in the order of the indicators, a crossing before its flag')
  t.same(trends.points.map(p => p.weightForAge?.crossedLines ?? null), [null, -4, null, -2], 'two lines down is an alert')
  t.equal(trends.points[3].heightForAge?.crossedLines, 2, 'so is two lines up')
  t.same(given, before, 'the points given are left unchanged')
})

t.test('the shape of a point, and bad input', async t => {
  t.same(growthTrends([]), { points: [], alerts: [] })
  const [first] = growthTrends([point(1, 0, { weightForAge: score(50) })]).points
  t.same(Object.keys(first), [...Object.keys(point(1, 0)), 'velocity'])
  t.same(first.weightForAge, { ...score(50), crossedLines: null })
  t.throws(() => growthTrends([point(1, 0), { ...point(2, 20), measuredAt: '2024-1-5' }]), RangeError, 'a date not written YYYY-MM-DD')
  t.throws(() => growthTrends([{ ...point(2, 20), measuredAt: 'soon' }]), /measurement 2/)
})

t.test('given batch by batch, the trends are those of all the points at once', async t => {
  // Irregular gaps, a long one (a year) and measurements on the same day; percentiles that wander across lines.
  const gaps = [0, 3, 11, 14, 20, 0, 40, 365, 2, 16, 30, 31, 90, 100, 7, 7, 7, 183, 182, 1]
  let day = 0
  const points = gaps.map((gap, index) => {
    day += gap
    const percentile = [80, 60, 40, 12, 9, 30, 55, 91, 96, 70][index % 10]
    return point(index + 1, day, { weightKg: 5 + index / 3, heightCm: index % 3 === 0 ? null : 60 + index, weightForAge: score(percentile, index === 7) })
  })
  const whole = growthTrends(points)
  t.ok(whole.alerts.length > 0, 'the points raise alerts')
  for (const size of [1, 2, 3, 5, 8, 20]) {
    const stream = new GrowthTrendStream()
    const streamed: GrowthTrends = { points: [], alerts: [] }
    for (let at = 0; at < points.length; at += size) {
      const part = stream.add(points.slice(at, at + size))
      streamed.points.push(...part.points)
      streamed.alerts.push(...part.alerts)
    }
    t.same(streamed, whole, `in batches of ${size}`)
  }
})
