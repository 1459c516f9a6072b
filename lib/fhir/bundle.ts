import { attachmentDocument } from './attachments'
import { visitEncounter } from './encounters'
import { gestationalAgeObservation } from './gestational-age'
import { entry, referenceTo } from './ids'
import { illnessCondition, illnessTemperature } from './illnesses'
import { linksTo, type Links } from './links'
import { measurementObservations } from './measurements'
import { medicalEventResource } from './medical-events'
import { childPatient } from './patient'
import { temperatureObservation } from './temperatures'
import type { Attachment, ChildRecords, FhirChild, Illness, MedicalEvent, Measurement, Temperature, Visit } from './records'
import type { Bundle, BundleEntry, Reference, Resource } from './resources'

export interface BundleOptions {
  /** When the bundle was assembled, RFC 3339 with a time zone. */
  timestamp: string
}

/** A child's records of each kind, batch by batch, each opened when its turn comes. */
export interface RecordBatches {
  visits: () => AsyncIterable<Visit[]>
  measurements: () => AsyncIterable<Measurement[]>
  illnesses: () => AsyncIterable<Illness[]>
  /** The illnesses' temperature readings. */
  temperatures?: () => AsyncIterable<Temperature[]>
  medicalEvents: () => AsyncIterable<MedicalEvent[]>
  attachments: () => AsyncIterable<Attachment[]>
}

/** The measurements and illnesses that attachments point to: only their references are kept. */
export interface AttachmentTargets {
  measurements: ReadonlySet<number>
  illnesses: ReadonlySet<number>
}

const entries = (resources: Resource[]): BundleEntry[] => resources.map(entry)

/**
 * Makes a child's resources kind after kind, in bundle order: the Patient
 * (with its gestational age at birth), the visits' Encounters, the measurements' Observations, the illnesses'
 * Conditions and temperatures, the medical events and the attachments. It
 * keeps only what later kinds point to (the visits' ids, and the references
 * of the records that attachments name), so a bundle can be written batch by
 * batch without holding the child's records.
 */
class BundleBuilder {
  readonly patient: Resource
  private readonly visitIds = new Set<number>()
  private readonly links: Links
  private readonly related = new Map<string, Reference[]>()

  constructor (private readonly child: FhirChild, private readonly targets: AttachmentTargets) {
    const patient = childPatient(child)
    this.patient = patient
    this.links = linksTo(patient, this.visitIds)
  }

  /** The Patient, and its gestational age at birth when it is known. */
  start (): BundleEntry[] {
    const birth = gestationalAgeObservation(this.child, this.links.subject)
    return entries(birth === null ? [this.patient] : [this.patient, birth])
  }

  /** Called with every visit before any other record. */
  encounters (visits: Visit[]): BundleEntry[] {
    for (const visit of visits) this.visitIds.add(visit.id)
    return entries(visits.map(visit => visitEncounter(visit, this.links.subject)))
  }

  observations (measurements: Measurement[]): BundleEntry[] {
    return entries(measurements.flatMap(measurement => {
      const observations = measurementObservations(measurement, this.links)
      if (this.targets.measurements.has(measurement.id)) this.related.set(`m${measurement.id}`, observations.map(referenceTo))
      return observations
    }))
  }

  conditions (illnesses: Illness[]): BundleEntry[] {
    return entries(illnesses.flatMap(illness => {
      const temperature = illnessTemperature(illness, this.links)
      const condition = illnessCondition(illness, this.links, temperature)
      if (this.targets.illnesses.has(illness.id)) this.related.set(`i${illness.id}`, [referenceTo(condition)])
      return temperature === null ? [condition] : [condition, temperature]
    }))
  }

  /** Each temperature reading an Observation about its illness's Condition. */
  readings (temperatures: Temperature[]): BundleEntry[] {
    return entries(temperatures.map(reading => temperatureObservation(reading, this.links)))
  }

  events (events: MedicalEvent[]): BundleEntry[] {
    return entries(events.map(event => medicalEventResource(event, this.links)))
  }

  documents (attachments: Attachment[]): BundleEntry[] {
    return entries(attachments.map(attachment => {
      const related = [
        ...(attachment.measurementId === null ? [] : this.related.get(`m${attachment.measurementId}`) ?? []),
        ...(attachment.illnessId === null ? [] : this.related.get(`i${attachment.illnessId}`) ?? [])
      ]
      return attachmentDocument(attachment, this.links, related)
    }))
  }
}

function bundleHead (options: BundleOptions): Omit<Bundle, 'entry'> {
  return { resourceType: 'Bundle', type: 'collection', timestamp: options.timestamp }
}

/** A child's whole record as a FHIR R4 collection Bundle, from records in memory. */
export function childBundle (records: ChildRecords, options: BundleOptions): Bundle {
  const builder = new BundleBuilder(records.child, {
    measurements: new Set(records.attachments.flatMap(attachment => attachment.measurementId ?? [])),
    illnesses: new Set(records.attachments.flatMap(attachment => attachment.illnessId ?? []))
  })
  return {
    ...bundleHead(options),
    entry: [
      ...builder.start(),
      ...builder.encounters(records.visits),
      ...builder.observations(records.measurements),
      ...builder.conditions(records.illnesses),
      ...builder.readings(records.temperatures ?? []),
      ...builder.events(records.medicalEvents),
      ...builder.documents(records.attachments)
    ]
  }
}

/**
 * The same bundle as `childBundle`, its head and then its entries batch by
 * batch as the records are read: memory holds one batch and the few
 * references later records need, whatever the size of the child's record.
 */
export function streamedBundle (child: FhirChild, targets: AttachmentTargets, records: RecordBatches, options: BundleOptions): { head: Omit<Bundle, 'entry'>, entries: AsyncIterable<BundleEntry[]> } {
  const builder = new BundleBuilder(child, targets)
  return {
    head: bundleHead(options),
    entries: (async function * () {
      yield builder.start()
      for await (const batch of records.visits()) yield builder.encounters(batch)
      for await (const batch of records.measurements()) yield builder.observations(batch)
      for await (const batch of records.illnesses()) yield builder.conditions(batch)
      if (records.temperatures !== undefined) {
        for await (const batch of records.temperatures()) yield builder.readings(batch)
      }
      for await (const batch of records.medicalEvents()) yield builder.events(batch)
      for await (const batch of records.attachments()) yield builder.documents(batch)
    })()
  }
}
