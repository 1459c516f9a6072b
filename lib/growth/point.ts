import { roundTo } from './lms'
import { ageScore, weightForHeightScore, DAYS_PER_MONTH, type Score } from './scores'
import type { GrowthTables } from './tables'

export interface GrowthChild {
  sex: string
  dateOfBirth: string
}

export interface GrowthMeasurement {
  id: number
  measuredAt: string
  heightCm: number | null
  weightKg: number | null
  headCircumferenceCm: number | null
}

export interface GrowthPoint {
  measurementId: number
  measuredAt: string
  ageDays: number
  ageMonths: number
  heightCm: number | null
  weightKg: number | null
  headCircumferenceCm: number | null
  bmi: number | null
  weightForAge: Score | null
  heightForAge: Score | null
  headCircumferenceForAge: Score | null
  bmiForAge: Score | null
  weightForHeight: Score | null
}

const DAY_MS = 86_400_000

function utcDay (date: string): number {
  const [year, month, day] = date.split('-').map(Number)
  return Date.UTC(year, month - 1, day) / DAY_MS
}

/** Whole days from one `YYYY-MM-DD` date to another, whatever the time zone. */
export function daysBetween (from: string, to: string): number {
  return utcDay(to) - utcDay(from)
}

type Scores = Pick<GrowthPoint, 'weightForAge' | 'heightForAge' | 'headCircumferenceForAge' | 'bmiForAge' | 'weightForHeight'>

const NO_SCORES: Scores = { weightForAge: null, heightForAge: null, headCircumferenceForAge: null, bmiForAge: null, weightForHeight: null }

/** A measurement's age, BMI and z-scores against the WHO references. */
export function growthPoint (tables: GrowthTables, child: GrowthChild, measurement: GrowthMeasurement): GrowthPoint {
  const { heightCm, weightKg, headCircumferenceCm } = measurement
  const ageDays = daysBetween(child.dateOfBirth, measurement.measuredAt)
  const bmi = heightCm !== null && weightKg !== null && heightCm > 0 ? weightKg / (heightCm / 100) ** 2 : null
  const sex = child.sex === 'male' || child.sex === 'female' ? child.sex : null
  const scores: Scores = sex === null
    ? NO_SCORES
    : {
        weightForAge: ageScore(tables, 'weightForAge', sex, ageDays, weightKg),
        heightForAge: ageScore(tables, 'heightForAge', sex, ageDays, heightCm),
        headCircumferenceForAge: ageScore(tables, 'headCircumferenceForAge', sex, ageDays, headCircumferenceCm),
        // The unrounded BMI, as WHO's software scores it.
        bmiForAge: ageScore(tables, 'bmiForAge', sex, ageDays, bmi),
        weightForHeight: weightForHeightScore(tables, sex, ageDays, heightCm, weightKg)
      }
  return {
    measurementId: measurement.id,
    measuredAt: measurement.measuredAt,
    ageDays,
    ageMonths: roundTo(ageDays / DAYS_PER_MONTH, 2),
    heightCm,
    weightKg,
    headCircumferenceCm,
    bmi: bmi === null ? null : roundTo(bmi, 2),
    ...scores
  }
}
