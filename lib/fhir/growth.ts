import { fullUrl, resourceId } from './ids'
import type { Links } from './links'
import type { GrowthScores, Measurement } from './records'
import type { Observation } from './resources'
import { vitalSignObservation, type VitalSign } from './vital-signs'

/** The growth charts, as each score's `reference` names them. */
const CHARTS: Record<string, string> = {
  'who-2006': 'WHO Child Growth Standards (2006)',
  'who-2007': 'WHO Reference 2007',
  'cdc-2000-infant': 'CDC 2000 growth charts, birth to 36 months',
  'cdc-2000': 'CDC 2000 growth charts, 2 to 20 years'
}

/** The percentiles of US Core's pediatric vital-sign profiles, and the measured value each is about. */
const PERCENTILES: Array<{ score: keyof GrowthScores, part: string, sign: VitalSign, about: string }> = [
  {
    score: 'weightForHeight',
    part: 'weight-for-length-percentile',
    sign: { loinc: '77606-2', display: 'Weight-for-length Per age and sex', unit: '%', ucum: '%' },
    about: 'body-weight'
  },
  {
    score: 'bmiForAge',
    part: 'bmi-percentile',
    sign: { loinc: '59576-9', display: 'Body mass index (BMI) [Percentile] Per age and sex', unit: '%', ucum: '%' },
    about: 'bmi'
  },
  {
    score: 'headCircumferenceForAge',
    part: 'head-circumference-percentile',
    sign: { loinc: '8289-1', display: 'Head Occipital-frontal circumference Percentile', unit: '%', ucum: '%' },
    about: 'head-circumference'
  }
]

/** The name of the chart that scored a value, as the Observation's method says it. */
export function chartName (reference: string): string {
  return CHARTS[reference] ?? reference
}

/**
 * A measurement's growth percentiles as Observations, each with the chart
 * that scored it as its method and derived from the measured value's
 * Observation. Only the scores of a measurement given with its scores.
 */
export function percentileObservations (measurement: Measurement, scores: GrowthScores | null, links: Links): Observation[] {
  if (scores === null) return []
  return PERCENTILES.flatMap(({ score, part, sign, about }) => {
    const scored = scores[score]
    if (scored === null) return []
    return [vitalSignObservation({
      id: resourceId('measurement', measurement.id, part),
      lastUpdated: measurement.updatedAt,
      sign,
      value: scored.percentile,
      date: measurement.measuredAt,
      subject: links.subject,
      encounter: links.encounterOf(measurement.visitId),
      notes: null,
      method: chartName(scored.reference),
      derivedFrom: [{ reference: fullUrl(resourceId('measurement', measurement.id, about)), type: 'Observation' }]
    })]
  })
}
