import { lmsValue, normalQuantile, roundHalfUp, roundTo } from './lms'
import { AGE_REFERENCES, DAYS_PER_MONTH, WHO_2007_FROM_MONTH, type AgeIndicator, type Reference } from './scores'
import type { TableName } from './sources'
import { keyRange, rowAt, type GrowthTables, type Lms, type Sex } from './tables'

export const INDICATORS = [
  'weight-for-age', 'height-for-age', 'head-circumference-for-age', 'bmi-for-age', 'weight-for-length', 'weight-for-height'
] as const

export type Indicator = typeof INDICATORS[number]

export const SD_KEYS = ['-3', '-2', '-1', '0', '1', '2', '3'] as const
export const PERCENTILE_KEYS = ['3', '15', '50', '85', '97'] as const

export interface CurvePoint {
  x: number
  reference: Reference
  l: number
  m: number
  s: number
  sd: Record<typeof SD_KEYS[number], number>
  percentile: Record<typeof PERCENTILE_KEYS[number], number>
}

export interface Curve {
  indicator: Indicator
  sex: Sex
  x: 'ageDays' | 'heightCm'
  unit: string
  points: CurvePoint[]
}

export interface CurveRange {
  from?: number
  to?: number
  /** The least distance in x between two consecutive points of one reference. */
  step?: number
}

/** One table's part of a curve: its rows up to `lastKey` (default: the last), and how their keys become x. */
interface CurvePart {
  table: TableName
  reference: Reference
  keyUnit: 'day' | 'month' | 'tenthCm'
  lastKey?: number
}

/** The last whole day under 60 months: 1826. */
const LAST_DAY_2006 = Math.ceil(WHO_2007_FROM_MONTH * DAYS_PER_MONTH) - 1

function ageParts (indicator: AgeIndicator): CurvePart[] {
  const { who2006, who2007 } = AGE_REFERENCES[indicator]
  const parts: CurvePart[] = [{ table: who2006, reference: 'who-2006', keyUnit: 'day', lastKey: LAST_DAY_2006 }]
  if (who2007 !== null) parts.push({ table: who2007.table, reference: 'who-2007', keyUnit: 'month', lastKey: who2007.lastMonth })
  return parts
}

const CURVES: Record<Indicator, { x: Curve['x']; unit: string; parts: CurvePart[] }> = {
  'weight-for-age': { x: 'ageDays', unit: 'kg', parts: ageParts('weightForAge') },
  'height-for-age': { x: 'ageDays', unit: 'cm', parts: ageParts('heightForAge') },
  'head-circumference-for-age': { x: 'ageDays', unit: 'cm', parts: ageParts('headCircumferenceForAge') },
  'bmi-for-age': { x: 'ageDays', unit: 'kg/m2', parts: ageParts('bmiForAge') },
  'weight-for-length': { x: 'heightCm', unit: 'kg', parts: [{ table: 'weightForLength2006', reference: 'who-2006', keyUnit: 'tenthCm' }] },
  'weight-for-height': { x: 'heightCm', unit: 'kg', parts: [{ table: 'weightForHeight2006', reference: 'who-2006', keyUnit: 'tenthCm' }] }
}

const SD_Z = SD_KEYS.map(Number)
const PERCENTILE_Z = PERCENTILE_KEYS.map(key => normalQuantile(Number(key) / 100))
/** Tolerates the binary error of sizes in tenths of a cm. */
const EPSILON = 1e-9

function xOf (key: number, unit: CurvePart['keyUnit']): number {
  if (unit === 'month') return roundHalfUp(key * DAYS_PER_MONTH)
  if (unit === 'tenthCm') return key / 10
  return key
}

function pointAt (x: number, reference: Reference, lms: Lms): CurvePoint {
  const values = (zs: number[], keys: readonly string[]) =>
    Object.fromEntries(keys.map((key, index) => [key, roundTo(lmsValue(lms, zs[index]), 4)]))
  return {
    x,
    reference,
    l: lms.l,
    m: lms.m,
    s: lms.s,
    sd: values(SD_Z, SD_KEYS) as CurvePoint['sd'],
    percentile: values(PERCENTILE_Z, PERCENTILE_KEYS) as CurvePoint['percentile']
  }
}

/**
 * The reference curves of one indicator for one sex: a point per table row in
 * [from, to], thinned so that consecutive points of a reference lie at least
 * `step` apart. Age-based curves run on WHO 2006 by day under 60 months, then
 * on WHO 2007 by whole month.
 */
export function referenceCurve (tables: GrowthTables, indicator: Indicator, sex: Sex, range: CurveRange = {}): Curve {
  const { x, unit, parts } = CURVES[indicator]
  const from = range.from ?? -Infinity
  const to = range.to ?? Infinity
  const step = range.step ?? 0
  const points: CurvePoint[] = []
  for (const part of parts) {
    const table = tables[part.table]
    const [firstKey, tableLastKey] = keyRange(table, sex)
    const lastKey = Math.min(tableLastKey, part.lastKey ?? Infinity)
    let previous = -Infinity
    for (let key = firstKey; key <= lastKey; key++) {
      const at = xOf(key, part.keyUnit)
      if (at < from - EPSILON || at > to + EPSILON || at < previous + step - EPSILON) continue
      const row = rowAt(table, sex, key)
      if (row === null) continue
      points.push(pointAt(at, part.reference, row))
      previous = at
    }
  }
  return { indicator, sex, x, unit, points }
}
