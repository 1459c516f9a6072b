import type { FhirMapping } from './bundle'
import { daysBetween } from './dates'
import { percentileObservations } from './growth'
import { referenceTo, resourceId } from './ids'
import type { Links } from './links'
import type { Measurement } from './records'
import type { Observation, Reference } from './resources'
import { VitalSigns, vitalSignObservation, type VitalSign } from './vital-signs'

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

/** Each measurement's values, then its growth percentiles when it comes with its scores. */
export const measurementMapping: FhirMapping<Measurement> = {
  resources: (measurements, bundle) => measurements.flatMap(measurement => {
    const observations = measurementObservations(measurement, bundle.links)
    bundle.relate('measurements', measurement.id, observations)
    return [...observations, ...percentileObservations(measurement, measurement.growth ?? null, bundle.links)]
  })
}
