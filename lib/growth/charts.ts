import { CDC_SOURCE, type CdcTables } from './cdc'
import { CDC_2_20_FROM_DAYS, cdcAgeScore, cdcWeightForLengthScore } from './cdc-scores'
import { ageScore, weightForHeightScore, type AgeIndicator, type Score } from './scores'
import { GROWTH_SOURCE } from './sources'
import type { GrowthTables, Sex } from './tables'

/**
 * Which charts score a child: WHO's (the default), CDC's 2000 charts, or
 * `auto`, what CDC recommends for the United States: WHO 2006 under 24 months
 * of the scored age, CDC 2000 from 24 months.
 */
export const GROWTH_REFERENCES = ['who', 'cdc', 'auto'] as const

export type GrowthReference = typeof GROWTH_REFERENCES[number]

export interface ChartOptions {
  /** Default `who`. */
  reference?: GrowthReference
  /** CDC's tables (see loadCdcTables), needed by `cdc` and `auto`. */
  cdc?: CdcTables | null
}

/** A reference with the tables it needs. */
export interface Charts {
  reference: GrowthReference
  who: GrowthTables | null
  cdc: CdcTables | null
}

/** Whether a reference scores with WHO's tables: all but `cdc`. */
export function needsWho (reference: GrowthReference): boolean {
  return reference !== 'cdc'
}

/**
 * The reference asked for, checked against the tables given: `who` and
 * `auto` need WHO's tables, `cdc` and `auto` need CDC's. Throws otherwise.
 */
export function chartsFor (who: GrowthTables | null, options: ChartOptions = {}): Charts {
  const reference = options.reference ?? 'who'
  const cdc = options.cdc ?? null
  if (!GROWTH_REFERENCES.includes(reference)) throw new Error(`unknown growth reference "${String(reference)}"`)
  if (needsWho(reference) && who === null) throw new Error(`growth reference ${reference} needs WHO's growth tables`)
  if (reference !== 'who' && cdc === null) throw new Error(`growth reference ${reference} needs CDC's growth charts`)
  return { reference, who, cdc }
}

/** How a growth response credits the charts of a reference. */
export function growthSource (reference: GrowthReference = 'who'): string {
  if (reference === 'cdc') return CDC_SOURCE
  if (reference === 'auto') return `WHO Child Growth Standards (2006); ${CDC_SOURCE}`
  return GROWTH_SOURCE
}

/** Whether CDC's charts score at this age: always for `cdc`, from 24 months (730.5 days) for `auto`. */
export function scoresWithCdc (reference: GrowthReference, ageDays: number): boolean {
  return reference === 'cdc' || (reference === 'auto' && ageDays >= CDC_2_20_FROM_DAYS)
}

export interface IndicatorScores {
  weightForAge: Score | null
  heightForAge: Score | null
  headCircumferenceForAge: Score | null
  bmiForAge: Score | null
  weightForHeight: Score | null
}

export interface MeasuredValues {
  heightCm: number | null
  weightKg: number | null
  headCircumferenceCm: number | null
  /** Unrounded, as the references score it. */
  bmi: number | null
}

/** WHO's tables of checked charts (chartsFor), for a reference that uses them. */
export function whoTables (charts: Charts): GrowthTables {
  if (charts.who === null) throw new Error(`growth reference ${charts.reference} does not use WHO's growth tables`)
  return charts.who
}

/** CDC's tables of checked charts (chartsFor), for a reference that uses them. */
export function cdcTables (charts: Charts): CdcTables {
  if (charts.cdc === null) throw new Error(`growth reference ${charts.reference} does not use CDC's growth charts`)
  return charts.cdc
}

/** The five scores at an age in days (the scored age), on the charts the reference uses at that age. */
export function scoresAt (charts: Charts, sex: Sex, ageDays: number, values: MeasuredValues): IndicatorScores {
  const { heightCm, weightKg, headCircumferenceCm, bmi } = values
  let byAge: (indicator: AgeIndicator, value: number | null) => Score | null
  let forHeight: Score | null
  if (scoresWithCdc(charts.reference, ageDays)) {
    const cdc = cdcTables(charts)
    byAge = (indicator, value) => cdcAgeScore(cdc, indicator, sex, ageDays, value)
    forHeight = cdcWeightForLengthScore(cdc, sex, ageDays, heightCm, weightKg)
  } else {
    const who = whoTables(charts)
    byAge = (indicator, value) => ageScore(who, indicator, sex, ageDays, value)
    forHeight = weightForHeightScore(who, sex, ageDays, heightCm, weightKg)
  }
  return {
    weightForAge: byAge('weightForAge', weightKg),
    heightForAge: byAge('heightForAge', heightCm),
    headCircumferenceForAge: byAge('headCircumferenceForAge', headCircumferenceCm),
    // The unrounded BMI, as WHO's software scores it.
    bmiForAge: byAge('bmiForAge', bmi),
    weightForHeight: forHeight
  }
}
