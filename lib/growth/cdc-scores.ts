import { cdcLms, type CdcTableName, type CdcTables } from './cdc'
import { lmsValue, lmsZ } from './lms'
import { DAYS_PER_MONTH, scoreFrom, usable, type AgeIndicator, type Reference, type Score } from './scores'
import type { Lms, Sex } from './tables'

/** From 24 months of the scored age (730.5 days) the 2–20 year charts take over from the infant charts. */
export const CDC_2_20_FROM_MONTHS = 24
export const CDC_2_20_FROM_DAYS = CDC_2_20_FROM_MONTHS * DAYS_PER_MONTH

export type CdcReference = Extract<Reference, 'cdc-2000-infant' | 'cdc-2000'>

/**
 * CDC's cut-offs for biologically implausible values, on its modified
 * z-score: a value is flagged below the first or above the second.
 */
export const CDC_IMPLAUSIBLE: Record<AgeIndicator | 'weightForHeight', readonly [number, number]> = {
  weightForAge: [-5, 8],
  heightForAge: [-5, 4],
  weightForHeight: [-4, 8],
  bmiForAge: [-4, 8],
  headCircumferenceForAge: [-5, 5]
}

export interface CdcChart {
  table: CdcTableName
  reference: CdcReference
  /** CDC's cut-offs for the chart's measure. */
  implausible: readonly [number, number]
}

/** Each of CDC's charts, with the reference it is named by and its cut-offs. */
export const CDC_CHARTS: Record<CdcTableName, CdcChart> = {
  weightForAgeInfant: { table: 'weightForAgeInfant', reference: 'cdc-2000-infant', implausible: CDC_IMPLAUSIBLE.weightForAge },
  lengthForAgeInfant: { table: 'lengthForAgeInfant', reference: 'cdc-2000-infant', implausible: CDC_IMPLAUSIBLE.heightForAge },
  headCircumferenceForAgeInfant: { table: 'headCircumferenceForAgeInfant', reference: 'cdc-2000-infant', implausible: CDC_IMPLAUSIBLE.headCircumferenceForAge },
  weightForLengthInfant: { table: 'weightForLengthInfant', reference: 'cdc-2000-infant', implausible: CDC_IMPLAUSIBLE.weightForHeight },
  weightForAge: { table: 'weightForAge', reference: 'cdc-2000', implausible: CDC_IMPLAUSIBLE.weightForAge },
  statureForAge: { table: 'statureForAge', reference: 'cdc-2000', implausible: CDC_IMPLAUSIBLE.heightForAge },
  bmiForAge: { table: 'bmiForAge', reference: 'cdc-2000', implausible: CDC_IMPLAUSIBLE.bmiForAge }
}

/**
 * The chart of each age-based indicator under 24 months and from 24 months
 * (null: none). Length is scored on the infant chart and stature on the 2–20
 * one; head circumference stays on the infant chart, which ends at 36 months.
 */
export const CDC_AGE_CHARTS: Record<AgeIndicator, { infant: CdcChart | null; from24Months: CdcChart | null }> = {
  weightForAge: { infant: CDC_CHARTS.weightForAgeInfant, from24Months: CDC_CHARTS.weightForAge },
  heightForAge: { infant: CDC_CHARTS.lengthForAgeInfant, from24Months: CDC_CHARTS.statureForAge },
  headCircumferenceForAge: { infant: CDC_CHARTS.headCircumferenceForAgeInfant, from24Months: CDC_CHARTS.headCircumferenceForAgeInfant },
  bmiForAge: { infant: null, from24Months: CDC_CHARTS.bmiForAge }
}

/** Weight-for-length, under 24 months only. The service does not ship CDC's weight-for-stature chart: no weightForHeight from 24 months. */
export const CDC_WEIGHT_FOR_LENGTH = CDC_CHARTS.weightForLengthInfant

/**
 * CDC's modified z-score: the distance from the median in units of half the
 * distance between the median and the value at z = −2 (below the median) or
 * z = +2 (above it).
 */
export function modifiedZ (x: number, lms: Lms): number {
  const { m } = lms
  return x < m ? (x - m) / ((m - lmsValue(lms, -2)) / 2) : (x - m) / ((lmsValue(lms, 2) - m) / 2)
}

/**
 * A value scored on one of CDC's charts at a key (age in months, or length in
 * cm), L, M and S interpolated between the rows around it: z = ((X/M)^L −
 * 1)/(L·S) with no restriction, flagged by CDC's rule on the unrounded
 * modified z-score. Null outside the chart.
 */
export function cdcChartScore (tables: CdcTables, chart: CdcChart, sex: Sex, key: number, value: number | null): Score | null {
  if (!usable(value)) return null
  const lms = cdcLms(tables[chart.table], sex, key)
  if (lms === null) return null
  const modified = modifiedZ(value, lms)
  const [low, high] = chart.implausible
  return scoreFrom(lmsZ(value, lms), chart.reference, () => modified < low || modified > high)
}

/** The chart an age-based indicator is scored on at an age in days, or null when CDC has none. */
export function cdcAgeChart (indicator: AgeIndicator, ageDays: number): CdcChart | null {
  const charts = CDC_AGE_CHARTS[indicator]
  return ageDays < CDC_2_20_FROM_DAYS ? charts.infant : charts.from24Months
}

/** An age-based score on CDC's charts, at the age in months (ageDays / 30.4375). */
export function cdcAgeScore (tables: CdcTables, indicator: AgeIndicator, sex: Sex, ageDays: number, value: number | null): Score | null {
  if (!(ageDays >= 0)) return null
  const chart = cdcAgeChart(indicator, ageDays)
  return chart === null ? null : cdcChartScore(tables, chart, sex, ageDays / DAYS_PER_MONTH, value)
}

/** Weight-for-length on CDC's infant chart, under 24 months and from 45 to 103.5 cm. */
export function cdcWeightForLengthScore (tables: CdcTables, sex: Sex, ageDays: number, lengthCm: number | null, weightKg: number | null): Score | null {
  if (!usable(lengthCm) || !(ageDays >= 0) || ageDays >= CDC_2_20_FROM_DAYS) return null
  return cdcChartScore(tables, CDC_WEIGHT_FOR_LENGTH, sex, lengthCm, weightKg)
}
