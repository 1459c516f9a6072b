import type { FhirMapping } from './bundle'
import { annotations, ifPresent } from './fields'
import { referenceTo, resourceId } from './ids'
import type { Links } from './links'
import type { Illness } from './records'
import type { Condition, Observation } from './resources'
import { VitalSigns, vitalSignObservation } from './vital-signs'

const CONDITION_CLINICAL = 'http://terminology.hl7.org/CodeSystem/condition-clinical'

/**
 * The temperature noted with an illness, dated at its start. An illness with
 * temperature readings has none: each reading is an Observation of its own.
 */
export function illnessTemperature (illness: Illness, links: Links): Observation | null {
  if (illness.temperatureC === null || (illness.maxTemperatureC ?? null) !== null) return null
  return vitalSignObservation({
    id: resourceId('illness', illness.id, 'body-temperature'),
    lastUpdated: illness.updatedAt,
    sign: VitalSigns.bodyTemperature,
    value: illness.temperatureC,
    date: illness.startDate,
    subject: links.subject,
    encounter: links.encounterOf(illness.visitId),
    notes: null
  })
}

export function illnessCondition (illness: Illness, links: Links, temperature: Observation | null): Condition {
  const clinicalStatus = illness.status === 'current' ? 'active' : 'resolved'
  const evidence = [
    ...(illness.symptoms === null ? [] : [{ code: [{ text: illness.symptoms }] }]),
    ...(temperature === null ? [] : [{ detail: [referenceTo(temperature)] }])
  ]
  return {
    resourceType: 'Condition',
    id: resourceId('illness', illness.id),
    meta: { lastUpdated: illness.updatedAt },
    clinicalStatus: { coding: [{ system: CONDITION_CLINICAL, code: clinicalStatus }] },
    ...ifPresent('code', illness.diagnosis === null ? null : { text: illness.diagnosis }),
    subject: links.subject,
    ...ifPresent('encounter', links.encounterOf(illness.visitId)),
    onsetDateTime: illness.startDate,
    ...ifPresent('abatementDateTime', illness.endDate),
    ...ifPresent('evidence', evidence.length === 0 ? null : evidence),
    ...annotations(illness.notes, illness.medications === null ? null : `Medications: ${illness.medications}`)
  }
}

/** Each illness a Condition, with the temperature noted with it when it has no readings. */
export const illnessMapping: FhirMapping<Illness> = {
  resources: (illnesses, bundle) => illnesses.flatMap(illness => {
    const temperature = illnessTemperature(illness, bundle.links)
    const condition = illnessCondition(illness, bundle.links, temperature)
    bundle.relate('illnesses', illness.id, [condition])
    return temperature === null ? [condition] : [condition, temperature]
  })
}
