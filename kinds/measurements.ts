import { Type, type Static } from '@sinclair/typebox'
import {
  daysBetween, fullUrl, IPS_PARTS, referenceTo, resourceId, VitalSigns, vitalSignObservation,
  type FhirMapping, type Links, type Observation, type Reference, type VitalSign
} from '../lib/fhir'
import { FreeText, Id, IsoDate, Nullable } from '../lib/schemas'
import type { GrowthScore as GrowthScoreSchema } from '../lib/growth/schemas'
import { storedFields } from './columns'
import { recordSchema } from './record-schema'
import type { Issue } from './rules'
import { kindNames, summaryIn, type RecordKind } from './kind'
import { VisitLink } from './visit-link'

const HeightCm = Type.Number({ minimum: 20, maximum: 250, 'x-max-decimals': 2 })
const WeightKg = Type.Number({ minimum: 0.2, maximum: 250, 'x-max-decimals': 3 })
const HeadCircumferenceCm = Type.Number({ minimum: 15, maximum: 80, 'x-max-decimals': 2 })

/** The values of a measurement, also taken by a visit created with one. */
export const MeasurementValues = {
  heightCm: Type.Optional(Nullable(HeightCm)),
  weightKg: Type.Optional(Nullable(WeightKg)),
  headCircumferenceCm: Type.Optional(Nullable(HeadCircumferenceCm)),
  notes: Type.Optional(Nullable(FreeText))
}

export const MeasurementFields = {
  measuredAt: IsoDate,
  ...MeasurementValues,
  visitId: VisitLink('measuredAt')
}

/** At least one of the three values. */
export function checkValues (values: Record<string, unknown>, path = '/body'): Issue[] {
  const some = ['heightCm', 'weightKg', 'headCircumferenceCm'].some(key => values[key] !== undefined && values[key] !== null)
  return some ? [] : [{ path, message: 'must have at least one of heightCm, weightKg, headCircumferenceCm' }]
}

export const Measurement = recordSchema('Measurement', {
  measuredAt: IsoDate,
  heightCm: Nullable(Type.Number()),
  weightKg: Nullable(Type.Number()),
  headCircumferenceCm: Nullable(Type.Number()),
  visitId: Nullable(Id),
  notes: Nullable(Type.String())
})
export type Measurement = Static<typeof Measurement>

/** A growth score as the growth route answers it, what FHIR reads of it. */
export type GrowthScore = Pick<Static<typeof GrowthScoreSchema>, 'z' | 'percentile' | 'reference'>

/** The scores of a measurement that FHIR has percentile codes for. */
export interface GrowthScores {
  weightForHeight: GrowthScore | null
  bmiForAge: GrowthScore | null
  headCircumferenceForAge: GrowthScore | null
}

/** A measurement as its FHIR mapping takes it: with its growth scores, when the bundle has them. */
export type ScoredMeasurement = Measurement & { growth?: GrowthScores | null }

/** Recumbent length is measured before this age in days, standing height from it. */
const STANDING_HEIGHT_FROM_DAY = 731

/** Rounds half up to 2 decimals, on the value as written. */
function round2 (value: number): number {
  return Number(`${Math.round(Number(`${value}e2`))}e-2`)
}

export function bodyMassIndex (weightKg: number, heightCm: number): number {
  return round2(weightKg / (heightCm / 100) ** 2)
}

export function heightSign (dateOfBirth: string, measuredAt: string): VitalSign {
  return daysBetween(dateOfBirth, measuredAt) < STANDING_HEIGHT_FROM_DAY ? VitalSigns.bodyLength : VitalSigns.bodyHeight
}

/** One Observation per value of a measurement, and the BMI when it has both weight and height. */
export function measurementObservations (measurement: Measurement, links: Links): Observation[] {
  const observe = (part: string, sign: VitalSign, value: number, derivedFrom?: Reference[]): Observation =>
    vitalSignObservation({
      id: resourceId('measurement', measurement.id, part),
      lastUpdated: measurement.updatedAt,
      sign,
      value,
      date: measurement.measuredAt,
      subject: links.subject,
      encounter: links.encounterOf(measurement.visitId),
      notes: measurement.notes,
      derivedFrom
    })

  const { weightKg, heightCm, headCircumferenceCm } = measurement
  const weight = weightKg === null ? null : observe('body-weight', VitalSigns.bodyWeight, weightKg)
  const height = heightCm === null ? null : observe('body-height', heightSign(links.dateOfBirth, measurement.measuredAt), heightCm)
  const head = headCircumferenceCm === null ? null : observe('head-circumference', VitalSigns.headCircumference, headCircumferenceCm)
  const bmi = weight === null || height === null
    ? null
    : observe('bmi', VitalSigns.bmi, bodyMassIndex(weight.valueQuantity.value, height.valueQuantity.value), [referenceTo(weight), referenceTo(height)])
  return [weight, height, head, bmi].filter((observation): observation is Observation => observation !== null)
}

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

/** Each measurement's values, then its growth percentiles when it comes with its scores. */
export const measurementMapping: FhirMapping<ScoredMeasurement> = {
  resources: (measurements, bundle) => measurements.flatMap(measurement => {
    const observations = measurementObservations(measurement, bundle.links)
    bundle.relate('measurements', measurement.id, observations)
    return [...observations, ...percentileObservations(measurement, measurement.growth ?? null, bundle.links)]
  })
}

export const measurementKind: RecordKind<'measurement', 'measurements', 'measurements'> = {
  ...kindNames('measurement', 'measurements', 'measurements', 4),
  fhir: measurementMapping,
  summary: summaryIn('growth', IPS_PARTS.vitalSigns, 'Observation'),
  ...storedFields(Measurement, MeasurementFields),
  dates: ['measuredAt'],
  sorts: { measuredAt: 'measured_at', createdAt: 'created_at' },
  defaultSort: '-measuredAt',
  check: body => checkValues(body)
}
