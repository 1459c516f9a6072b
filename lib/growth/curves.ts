import type { CdcTableName, CdcTables } from './cdc'
import { CDC_2_20_FROM_DAYS, CDC_2_20_FROM_MONTHS, CDC_AGE_CHARTS, CDC_WEIGHT_FOR_LENGTH, type CdcChart } from './cdc-scores'
import { cdcTables, chartsFor, whoTables, type ChartOptions, type GrowthReference } from './charts'
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

/** One WHO table's part of a curve: its rows up to `lastKey` (default: the last), and how their keys become x. */
interface WhoPart {
  charts: 'who'
  table: TableName
  reference: Reference
  keyUnit: 'day' | 'month' | 'tenthCm'
  lastKey?: number
}

/** One CDC chart's part of a curve: its rows from `fromKey` and below `belowKey` (months, or cm). */
interface CdcPart {
  charts: 'cdc'
  table: CdcTableName
  reference: Reference
  keyUnit: 'month' | 'cm'
  fromKey?: number
  belowKey?: number
}

type CurvePart = WhoPart | CdcPart

/** The last whole day under 60 months: 1826. */
const LAST_DAY_2006 = Math.ceil(WHO_2007_FROM_MONTH * DAYS_PER_MONTH) - 1
/** The last whole day under 24 months, where `auto` leaves WHO for CDC: 730. */
const LAST_DAY_BEFORE_CDC = Math.ceil(CDC_2_20_FROM_DAYS) - 1

function ageParts (indicator: AgeIndicator): CurvePart[] {
  const { who2006, who2007 } = AGE_REFERENCES[indicator]
  const parts: CurvePart[] = [{ charts: 'who', table: who2006, reference: 'who-2006', keyUnit: 'day', lastKey: LAST_DAY_2006 }]
  if (who2007 !== null) parts.push({ charts: 'who', table: who2007.table, reference: 'who-2007', keyUnit: 'month', lastKey: who2007.lastMonth })
  return parts
}

/** CDC's charts of an indicator from a month on: the infant chart under 24 months, the 2–20 year one from then. */
function cdcAgeParts (indicator: AgeIndicator, fromMonth: number): CurvePart[] {
  const { infant, from24Months } = CDC_AGE_CHARTS[indicator]
  const part = (chart: CdcChart, fromKey: number, belowKey?: number): CdcPart =>
    ({ charts: 'cdc', table: chart.table, reference: chart.reference, keyUnit: 'month', fromKey, belowKey })
  if (infant !== null && from24Months !== null && infant.table === from24Months.table) return [part(infant, fromMonth)]
  const parts: CurvePart[] = []
  if (infant !== null && fromMonth < CDC_2_20_FROM_MONTHS) parts.push(part(infant, fromMonth, CDC_2_20_FROM_MONTHS))
  if (from24Months !== null) parts.push(part(from24Months, Math.max(fromMonth, CDC_2_20_FROM_MONTHS)))
  return parts
}

/** WHO 2006 by day under 24 months, then CDC's charts from 24 months. */
function autoAgeParts (indicator: AgeIndicator): CurvePart[] {
  const who2006: CurvePart = { charts: 'who', table: AGE_REFERENCES[indicator].who2006, reference: 'who-2006', keyUnit: 'day', lastKey: LAST_DAY_BEFORE_CDC }
  return [who2006, ...cdcAgeParts(indicator, CDC_2_20_FROM_MONTHS)]
}

const AXES: Record<Indicator, { x: Curve['x']; unit: string }> = {
  'weight-for-age': { x: 'ageDays', unit: 'kg' },
  'height-for-age': { x: 'ageDays', unit: 'cm' },
  'head-circumference-for-age': { x: 'ageDays', unit: 'cm' },
  'bmi-for-age': { x: 'ageDays', unit: 'kg/m2' },
  'weight-for-length': { x: 'heightCm', unit: 'kg' },
  'weight-for-height': { x: 'heightCm', unit: 'kg' }
}

const WHO_WEIGHT_FOR_LENGTH: CurvePart = { charts: 'who', table: 'weightForLength2006', reference: 'who-2006', keyUnit: 'tenthCm' }
const CDC_WEIGHT_FOR_LENGTH_PART: CurvePart = { charts: 'cdc', table: CDC_WEIGHT_FOR_LENGTH.table, reference: CDC_WEIGHT_FOR_LENGTH.reference, keyUnit: 'cm' }

/**
 * The tables each reference draws an indicator from. CDC's weight-for-length
 * serves under 24 months only, and nothing scores weight-for-height on CDC's
 * side: with `cdc` and `auto` that curve has no points. With `auto`,
 * weight-for-length is scored under 24 months, on WHO's table.
 */
const CURVES: Record<GrowthReference, Record<Indicator, CurvePart[]>> = {
  who: {
    'weight-for-age': ageParts('weightForAge'),
    'height-for-age': ageParts('heightForAge'),
    'head-circumference-for-age': ageParts('headCircumferenceForAge'),
    'bmi-for-age': ageParts('bmiForAge'),
    'weight-for-length': [WHO_WEIGHT_FOR_LENGTH],
    'weight-for-height': [{ charts: 'who', table: 'weightForHeight2006', reference: 'who-2006', keyUnit: 'tenthCm' }]
  },
  cdc: {
    'weight-for-age': cdcAgeParts('weightForAge', 0),
    'height-for-age': cdcAgeParts('heightForAge', 0),
    'head-circumference-for-age': cdcAgeParts('headCircumferenceForAge', 0),
    'bmi-for-age': cdcAgeParts('bmiForAge', 0),
    'weight-for-length': [CDC_WEIGHT_FOR_LENGTH_PART],
    'weight-for-height': []
  },
  auto: {
    'weight-for-age': autoAgeParts('weightForAge'),
    'height-for-age': autoAgeParts('heightForAge'),
    'head-circumference-for-age': autoAgeParts('headCircumferenceForAge'),
    'bmi-for-age': autoAgeParts('bmiForAge'),
    'weight-for-length': [WHO_WEIGHT_FOR_LENGTH],
    'weight-for-height': []
  }
}

const SD_Z = SD_KEYS.map(Number)
let percentileZ: number[] | undefined
/** The z-scores of the centile lines, worked out at their first use. */
const PERCENTILE_Z = (): number[] => (percentileZ ??= PERCENTILE_KEYS.map(key => normalQuantile(Number(key) / 100)))
/** Tolerates the binary error of sizes in tenths of a cm, and of CDC's keys. */
const EPSILON = 1e-9

function xOf (key: number, unit: WhoPart['keyUnit'] | CdcPart['keyUnit']): number {
  if (unit === 'month') return roundHalfUp(key * DAYS_PER_MONTH)
  if (unit === 'tenthCm') return key / 10
  return key
}

/** A WHO part's rows, as x and L, M, S. */
function * whoRows (tables: GrowthTables, part: WhoPart, sex: Sex): Generator<[number, Lms]> {
  const table = tables[part.table]
  const [firstKey, tableLastKey] = keyRange(table, sex)
  const lastKey = Math.min(tableLastKey, part.lastKey ?? Infinity)
  for (let key = firstKey; key <= lastKey; key++) {
    const row = rowAt(table, sex, key)
    if (row !== null) yield [xOf(key, part.keyUnit), row]
  }
}

/** A CDC part's rows, as x and L, M, S. */
function * cdcRows (tables: CdcTables, part: CdcPart, sex: Sex): Generator<[number, Lms]> {
  const rows = tables[part.table][sex]
  const fromKey = part.fromKey ?? -Infinity
  const belowKey = part.belowKey ?? Infinity
  for (let index = 0; index < rows.keys.length; index++) {
    const key = rows.keys[index]
    if (key < fromKey - EPSILON || key >= belowKey - EPSILON) continue
    yield [xOf(key, part.keyUnit), { l: rows.l[index], m: rows.m[index], s: rows.s[index] }]
  }
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
    percentile: values(PERCENTILE_Z(), PERCENTILE_KEYS) as CurvePoint['percentile']
  }
}

/**
 * The reference curves of one indicator for one sex: a point per table row in
 * [from, to], thinned so that consecutive points of a reference lie at least
 * `step` apart. With WHO's references (the default), age-based curves run on
 * WHO 2006 by day under 60 months, then on WHO 2007 by whole month. With
 * `cdc`, they run on CDC's rows (0, 0.5, 1.5, … months; x is the month ×
 * 30.4375 rounded), the infant charts under 24 months and the 2–20 year ones
 * from then; with `auto`, on WHO 2006 by day under 24 months, then on CDC's.
 * WHO's tables may be null when only CDC's are used.
 */
export function referenceCurve (tables: GrowthTables | null, indicator: Indicator, sex: Sex, range: CurveRange = {}, options: ChartOptions = {}): Curve {
  const charts = chartsFor(tables, options)
  const { x, unit } = AXES[indicator]
  const from = range.from ?? -Infinity
  const to = range.to ?? Infinity
  const step = range.step ?? 0
  const points: CurvePoint[] = []
  for (const part of CURVES[charts.reference][indicator]) {
    const rows = part.charts === 'who' ? whoRows(whoTables(charts), part, sex) : cdcRows(cdcTables(charts), part, sex)
    let previous = -Infinity
    for (const [at, lms] of rows) {
      if (at < from - EPSILON || at > to + EPSILON || at < previous + step - EPSILON) continue
      points.push(pointAt(at, part.reference, lms))
      previous = at
    }
  }
  return { indicator, sex, x, unit, points }
}
