// A child's growth over time: how fast each value changes, how many major
// centile lines each score has crossed, and the alerts a pediatrician should see.
import { roundTo } from './lms'
import { daysBetween, type GrowthPoint } from './point'
import { DAYS_PER_MONTH, type Score } from './scores'

/** A growth point's scores, in the order alerts list them within one measurement. */
export const INDICATORS = ['weightForAge', 'heightForAge', 'headCircumferenceForAge', 'bmiForAge', 'weightForHeight'] as const
export type Indicator = typeof INDICATORS[number]

/** The percentiles drawn as lines on the pediatrician's chart. */
export const MAJOR_LINES = [3, 10, 25, 50, 75, 90, 97] as const

/** A velocity compares a measurement with one taken at least this many days before. */
export const VELOCITY_MIN_DAYS = 14
/** Centile crossings compare a score with one from 30 days to 6 months before. */
export const CROSSING_MIN_DAYS = 30
/** Six months of 30.4375 days: 182.625 days, so a measurement 182 days before is in the window and one 183 days before is not. */
export const CROSSING_MAX_DAYS = 6 * DAYS_PER_MONTH
/** A score that has crossed this many major lines, either way, is an alert. */
export const ALERT_LINES = 2

export interface Velocity {
  weightKgPerMonth: number | null
  heightCmPerMonth: number | null
  headCircumferenceCmPerMonth: number | null
  /** The days between the two measurements compared. */
  sinceDays: number
}

export type TrendScore = Score & { crossedLines: number | null }

export type TrendPoint = Omit<GrowthPoint, Indicator> & { [K in Indicator]: TrendScore | null } & { velocity: Velocity | null }

export type AlertKind = 'crossing-down' | 'crossing-up' | 'flagged'

export interface GrowthAlert {
  measurementId: number
  indicator: Indicator
  kind: AlertKind
}

export interface GrowthTrends {
  points: TrendPoint[]
  alerts: GrowthAlert[]
}

const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/

/** A measurement's day, counted from 1970-01-01. A date that is not YYYY-MM-DD is refused. */
function dayOf (point: GrowthPoint): number {
  const day = ISO_DATE.test(point.measuredAt) ? daysBetween('1970-01-01', point.measuredAt) : Number.NaN
  if (!Number.isInteger(day)) throw new RangeError(`measurement ${point.measurementId}: measuredAt ${JSON.stringify(point.measuredAt)} is not a date`)
  return day
}

/** How many major lines lie at or below a percentile. */
function linesAtOrBelow (percentile: number): number {
  return MAJOR_LINES.filter(line => line <= percentile).length
}

/**
 * The signed number of major lines crossed from one percentile to another,
 * negative downward. A line is crossed when one percentile is below it and the
 * other at or above it: a score exactly on a line counts as on or above it, so
 * 50 to 49.9 crosses the 50th line, 50.1 to 50 does not, and 50 to 50 crosses none.
 */
export function linesCrossed (before: number, now: number): number {
  return linesAtOrBelow(now) - linesAtOrBelow(before)
}

function perMonth (now: number | null, before: number | null, days: number): number | null {
  return now === null || before === null ? null : roundTo((now - before) / (days / DAYS_PER_MONTH), 2)
}

/**
 * The velocity of the point at `index`, from the latest measurement at least
 * 14 days before it, whatever values that measurement has. A value it lacks
 * has a null velocity, even when an older measurement has that value: one
 * velocity compares one pair of measurements, so that `sinceDays` holds for
 * each of its values.
 */
function velocityAt (points: GrowthPoint[], days: number[], index: number): Velocity | null {
  const now = points[index]
  for (let j = index - 1; j >= 0; j--) {
    const sinceDays = days[index] - days[j]
    if (sinceDays < VELOCITY_MIN_DAYS) continue
    const before = points[j]
    return {
      weightKgPerMonth: perMonth(now.weightKg, before.weightKg, sinceDays),
      heightCmPerMonth: perMonth(now.heightCm, before.heightCm, sinceDays),
      headCircumferenceCmPerMonth: perMonth(now.headCircumferenceCm, before.headCircumferenceCm, sinceDays),
      sinceDays
    }
  }
  return null
}

/**
 * The lines crossed by each score of each point, against the same indicator
 * at the earliest measurement 30 days to 6 months before that has a score for
 * it; null when there is none. Scores carry their percentile rounded to one
 * decimal, and that rounded percentile is compared: it is the one the chart
 * shows, so a line counts as crossed when the percentiles shown say so.
 * Rounding moves a percentile across a line only when it lies within 0.05 of
 * it. One pass per indicator over the points in order: the earliest scored
 * measurement of the window only moves forward.
 */
function crossings (points: GrowthPoint[], days: number[], indicator: Indicator): Array<number | null> {
  const scored = points.flatMap((point, index) => point[indicator] === null ? [] : [index])
  let first = 0
  return points.map((point, index) => {
    const score = point[indicator]
    if (score === null) return null
    while (days[index] - days[scored[first]] > CROSSING_MAX_DAYS) first++
    const earliest = scored[first]
    if (days[index] - days[earliest] < CROSSING_MIN_DAYS) return null
    return linesCrossed((points[earliest][indicator] as Score).percentile, score.percentile)
  })
}

function alertsOf (point: TrendPoint): GrowthAlert[] {
  const alerts: GrowthAlert[] = []
  for (const indicator of INDICATORS) {
    const score = point[indicator]
    if (score === null) continue
    const { crossedLines } = score
    // Within one score the crossing comes before the flag.
    if (crossedLines !== null && Math.abs(crossedLines) >= ALERT_LINES) {
      alerts.push({ measurementId: point.measurementId, indicator, kind: crossedLines < 0 ? 'crossing-down' : 'crossing-up' })
    }
    if (score.flagged) alerts.push({ measurementId: point.measurementId, indicator, kind: 'flagged' })
  }
  return alerts
}

/**
 * A child's growth points with a velocity on each point and `crossedLines` on
 * each score, oldest first (by date, then measurement id), and the alerts in
 * the same order: within a measurement in the order of INDICATORS. The points
 * given may be in any order and are left unchanged.
 */
export function growthTrends (given: readonly GrowthPoint[]): GrowthTrends {
  const dated = given.map(point => ({ point, day: dayOf(point) }))
  dated.sort((a, b) => a.day - b.day || a.point.measurementId - b.point.measurementId)
  const sorted = dated.map(({ point }) => point)
  const days = dated.map(({ day }) => day)
  const crossed = Object.fromEntries(INDICATORS.map(indicator => [indicator, crossings(sorted, days, indicator)])) as Record<Indicator, Array<number | null>>
  const points = sorted.map((point, index): TrendPoint => {
    const trend = { ...point, velocity: velocityAt(sorted, days, index) } as TrendPoint
    for (const indicator of INDICATORS) {
      const score = point[indicator]
      trend[indicator] = score === null ? null : { ...score, crossedLines: crossed[indicator][index] }
    }
    return trend
  })
  return { points, alerts: points.flatMap(alertsOf) }
}

/**
 * The same trends over a child's points given batch by batch, oldest first:
 * each batch is answered as `growthTrends` would answer it within all the
 * points, holding only the points a later one may be compared with (those of
 * the last six months, and the latest one before them).
 */
export class GrowthTrendStream {
  private held: GrowthPoint[] = []

  add (batch: readonly GrowthPoint[]): GrowthTrends {
    if (batch.length === 0) return { points: [], alerts: [] }
    const all = [...this.held, ...batch]
    const trends = growthTrends(all)
    const fresh = new Set(batch.map(point => point.measurementId))
    const points = trends.points.filter(point => fresh.has(point.measurementId))
    // growthTrends answered the points in order; keep those given, not their trends.
    const given = new Map(all.map(point => [point.measurementId, point]))
    const sorted = trends.points.map(point => given.get(point.measurementId) as GrowthPoint)
    const days = sorted.map(dayOf)
    const last = days[days.length - 1]
    const recent = days.findIndex(day => last - day <= CROSSING_MAX_DAYS)
    this.held = sorted.slice(Math.max(0, recent - 1))
    return { points, alerts: trends.alerts.filter(alert => fresh.has(alert.measurementId)) }
  }
}
