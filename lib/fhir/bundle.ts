import { attachmentDocument } from './attachments'
import { visitEncounter } from './encounters'
import { entry, referenceTo } from './ids'
import { illnessCondition, illnessTemperature } from './illnesses'
import { linksTo } from './links'
import { measurementObservations } from './measurements'
import { medicalEventResource } from './medical-events'
import { childPatient } from './patient'
import type { Attachment, ChildRecords } from './records'
import type { Bundle, Condition, Observation, Reference, Resource } from './resources'

export interface BundleOptions {
  /** When the bundle was assembled, RFC 3339 with a time zone. */
  timestamp: string
}

/**
 * A child's whole record as a FHIR R4 collection Bundle: the Patient, then the
 * visits' Encounters, the measurements' Observations, the illnesses'
 * Conditions and temperatures, the medical events and the attachments.
 */
export function childBundle (records: ChildRecords, options: BundleOptions): Bundle {
  const patient = childPatient(records.child)
  const encounters = new Map(records.visits.map(visit => [visit.id, visitEncounter(visit, referenceTo(patient))]))
  const links = linksTo(patient, encounters)

  const observations = new Map(records.measurements.map(measurement =>
    [measurement.id, measurementObservations(measurement, links)]))
  const illnesses = new Map(records.illnesses.map(illness => {
    const temperature = illnessTemperature(illness, links)
    return [illness.id, { condition: illnessCondition(illness, links, temperature), temperature }]
  }))
  const events = records.medicalEvents.map(event => medicalEventResource(event, links))
  const relatedTo = (attachment: Attachment): Reference[] => {
    const measured = attachment.measurementId === null ? undefined : observations.get(attachment.measurementId)
    const ill = attachment.illnessId === null ? undefined : illnesses.get(attachment.illnessId)
    return [...(measured ?? []), ...(ill === undefined ? [] : [ill.condition])].map(referenceTo)
  }
  const documents = records.attachments.map(attachment => attachmentDocument(attachment, links, relatedTo(attachment)))

  const resources: Resource[] = [
    patient,
    ...encounters.values(),
    ...[...observations.values()].flat(),
    ...[...illnesses.values()].flatMap(({ condition, temperature }): Array<Condition | Observation> =>
      temperature === null ? [condition] : [condition, temperature]),
    ...events,
    ...documents
  ]
  return { resourceType: 'Bundle', type: 'collection', timestamp: options.timestamp, entry: resources.map(entry) }
}
