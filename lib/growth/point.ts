import { chartsFor, scoresAt, type ChartOptions, type IndicatorScores } from './charts'
import { roundTo } from './lms'
import { DAYS_PER_MONTH, type Score } from './scores'
import type { GrowthTables } from './tables'

export interface GrowthChild {
  sex: string
  dateOfBirth: string
  /** Gestational age at birth in completed weeks and days; unknown (null or absent) is taken as term. */
  gestationalAgeAtBirthWeeks?: number | null
  gestationalAgeAtBirthDays?: number | null
}

/** A pregnancy at term lasts 40 weeks. */
export const TERM_DAYS = 280
/** A child born before 37 completed weeks is preterm. */
export const PRETERM_BELOW_WEEKS = 37
/** The age is corrected until 24 months of chronological age, in the month the WHO tables use. */
export const CORRECTED_UNTIL_DAYS = 24 * DAYS_PER_MONTH

export type ScoredAt = 'corrected' | 'chronological'

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
  correctedAgeDays: number | null
  scoredAt: ScoredAt
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

const NO_SCORES: IndicatorScores = { weightForAge: null, heightForAge: null, headCircumferenceForAge: null, bmiForAge: null, weightForHeight: null }

/**
 * The days a preterm child's age is corrected by: how much earlier than 40
 * weeks it was born. Null for a child born at 37 weeks or later, or whose
 * gestational age is unknown.
 */
export function pretermCorrection (child: GrowthChild): number | null {
  const weeks = child.gestationalAgeAtBirthWeeks ?? null
  if (weeks === null || weeks >= PRETERM_BELOW_WEEKS) return null
  return TERM_DAYS - (weeks * 7 + (child.gestationalAgeAtBirthDays ?? 0))
}

/**
 * The corrected age of a measurement taken at `ageDays`: the chronological
 * age less the correction, under 24 months of chronological age; null when
 * the age is not corrected. It is below 0 before the term date.
 */
export function correctedAge (child: GrowthChild, ageDays: number): number | null {
  const correction = pretermCorrection(child)
  return correction === null || ageDays >= CORRECTED_UNTIL_DAYS ? null : ageDays - correction
}

/**
 * A measurement's age, BMI and z-scores, at the corrected age of a preterm
 * child under 24 months and at the chronological age otherwise. Before the
 * term date nothing is scored: the references start at birth at term.
 * The scores are WHO's unless `options.reference` asks for CDC's charts
 * (`cdc`) or for WHO's under 24 months of the scored age and CDC's from then
 * (`auto`); WHO's tables may be null when only CDC's are used.
 */
export function growthPoint (tables: GrowthTables | null, child: GrowthChild, measurement: GrowthMeasurement, options: ChartOptions = {}): GrowthPoint {
  const charts = chartsFor(tables, options)
  const { heightCm, weightKg, headCircumferenceCm } = measurement
  const ageDays = daysBetween(child.dateOfBirth, measurement.measuredAt)
  const correctedAgeDays = correctedAge(child, ageDays)
  const scoredAge = correctedAgeDays ?? ageDays
  const bmi = heightCm !== null && weightKg !== null && heightCm > 0 ? weightKg / (heightCm / 100) ** 2 : null
  const sex = child.sex === 'male' || child.sex === 'female' ? child.sex : null
  const scores = sex === null || scoredAge < 0
    ? NO_SCORES
    : scoresAt(charts, sex, scoredAge, { heightCm, weightKg, headCircumferenceCm, bmi })
  return {
    measurementId: measurement.id,
    measuredAt: measurement.measuredAt,
    ageDays,
    ageMonths: roundTo(ageDays / DAYS_PER_MONTH, 2),
    correctedAgeDays,
    scoredAt: correctedAgeDays === null ? 'chronological' : 'corrected',
    heightCm,
    weightKg,
    headCircumferenceCm,
    bmi: bmi === null ? null : roundTo(bmi, 2),
    ...scores
  }
}
