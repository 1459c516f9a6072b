import { lmsZ, normalCdf, restrictedZ, roundHalfUp, roundTo } from './lms'
import type { TableName } from './sources'
import { rowAt, type GrowthTables, type Lms, type LmsTable, type Sex } from './tables'

export const DAYS_PER_MONTH = 30.4375
/** WHO 2006 covers ages under 60 months; WHO 2007 takes over from there. */
export const WHO_2007_FROM_MONTH = 60
/** From this age in days, length-based references give way to height-based ones. */
export const HEIGHT_FROM_DAY = 731

/** The tables a score can come from: WHO's two, and CDC's infant and 2–20 year charts. */
export const REFERENCES = ['who-2006', 'who-2007', 'cdc-2000-infant', 'cdc-2000'] as const

export type Reference = typeof REFERENCES[number]

export interface Score {
  z: number
  percentile: number
  reference: Reference
  flagged: boolean
}

interface Rule {
  /** Whether a z beyond ±3 is WHO's restricted one. */
  restricted: boolean
  /** WHO's implausible values, judged on the rounded z as WHO's software does. */
  flagged: (z: number) => boolean
}

interface AgeReference extends Rule {
  who2006: TableName
  who2007: { table: TableName; lastMonth: number } | null
}

export type AgeIndicator = 'weightForAge' | 'heightForAge' | 'headCircumferenceForAge' | 'bmiForAge'

export const AGE_REFERENCES: Record<AgeIndicator, AgeReference> = {
  weightForAge: {
    who2006: 'weightForAge2006',
    who2007: { table: 'weightForAge2007', lastMonth: 120 },
    restricted: true,
    flagged: z => z < -6 || z > 5
  },
  heightForAge: {
    who2006: 'lengthForAge2006',
    who2007: { table: 'heightForAge2007', lastMonth: 228 },
    restricted: false,
    flagged: z => Math.abs(z) > 6
  },
  headCircumferenceForAge: {
    who2006: 'headCircumferenceForAge2006',
    who2007: null,
    restricted: false,
    flagged: z => Math.abs(z) > 5
  },
  bmiForAge: {
    who2006: 'bmiForAge2006',
    who2007: { table: 'bmiForAge2007', lastMonth: 228 },
    restricted: true,
    flagged: z => Math.abs(z) > 5
  }
}

const WEIGHT_FOR_HEIGHT: Rule = { restricted: true, flagged: z => Math.abs(z) > 5 }

/** The size ranges of weight-for-length (before 731 days) and weight-for-height. */
export const WEIGHT_FOR_LENGTH_CM = [45, 110] as const
export const WEIGHT_FOR_HEIGHT_CM = [65, 120] as const

/**
 * A score from its unrounded z: z to 2 decimals, the percentile 100·Φ(z) of
 * the unrounded z to 1 decimal. `flagged` is given the rounded z.
 */
export function scoreFrom (raw: number, reference: Reference, flagged: (z: number) => boolean): Score | null {
  if (!Number.isFinite(raw)) return null
  const z = roundTo(raw, 2)
  return { z, percentile: roundTo(100 * normalCdf(raw), 1), reference, flagged: flagged(z) }
}

function score (value: number, lms: Lms, rule: Rule, reference: Reference): Score | null {
  return scoreFrom(rule.restricted ? restrictedZ(value, lms) : lmsZ(value, lms), reference, rule.flagged)
}

/** L, M and S interpolated linearly between the two whole keys around a key. */
export function interpolated (table: LmsTable, sex: Sex, key: number): Lms | null {
  const nearest = Math.round(key)
  if (Math.abs(key - nearest) < 1e-9) return rowAt(table, sex, nearest)
  const low = Math.floor(key)
  const below = rowAt(table, sex, low)
  const above = rowAt(table, sex, low + 1)
  if (below === null || above === null) return null
  const share = key - low
  return {
    l: below.l + share * (above.l - below.l),
    m: below.m + share * (above.m - below.m),
    s: below.s + share * (above.s - below.s)
  }
}

/** A measured value that can be scored: a number above 0. */
export function usable (value: number | null): value is number {
  return value !== null && Number.isFinite(value) && value > 0
}

/**
 * An age-based score: WHO 2006 at the age in days rounded half up under 60
 * months, WHO 2007 at the exact age in months from there.
 */
export function ageScore (tables: GrowthTables, indicator: AgeIndicator, sex: Sex, ageDays: number, value: number | null): Score | null {
  if (!usable(value) || !(ageDays >= 0)) return null
  const reference = AGE_REFERENCES[indicator]
  const months = ageDays / DAYS_PER_MONTH
  if (months < WHO_2007_FROM_MONTH) {
    const lms = rowAt(tables[reference.who2006], sex, roundHalfUp(ageDays))
    return lms === null ? null : score(value, lms, reference, 'who-2006')
  }
  if (reference.who2007 === null || months > reference.who2007.lastMonth) return null
  const lms = interpolated(tables[reference.who2007.table], sex, months)
  return lms === null ? null : score(value, lms, reference, 'who-2007')
}

/** Weight-for-length before 731 days, weight-for-height from then, both under 60 months. */
export function weightForHeightScore (tables: GrowthTables, sex: Sex, ageDays: number, heightCm: number | null, weightKg: number | null): Score | null {
  if (!usable(weightKg) || !usable(heightCm) || !(ageDays >= 0) || ageDays / DAYS_PER_MONTH >= WHO_2007_FROM_MONTH) return null
  const byLength = roundHalfUp(ageDays) < HEIGHT_FROM_DAY
  const [min, max] = byLength ? WEIGHT_FOR_LENGTH_CM : WEIGHT_FOR_HEIGHT_CM
  if (heightCm < min || heightCm > max) return null
  const lms = interpolated(byLength ? tables.weightForLength2006 : tables.weightForHeight2006, sex, heightCm * 10)
  return lms === null ? null : score(weightKg, lms, WEIGHT_FOR_HEIGHT, 'who-2006')
}
