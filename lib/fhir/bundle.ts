import { attachmentDocument } from './attachments'
import { gestationalAgeObservation } from './gestational-age'
import { entry, referenceTo } from './ids'
import { linksTo, type Links } from './links'
import { childPatient } from './patient'
import type { Attachment, FhirChild } from './records'
import type { Bundle, BundleEntry, Reference, Resource } from './resources'

export interface BundleOptions {
  /** When the bundle was assembled, RFC 3339 with a time zone. */
  timestamp: string
}

/** The measurements and illnesses that attachments point to: only their references are kept. */
export interface AttachmentTargets {
  measurements: ReadonlySet<number>
  illnesses: ReadonlySet<number>
}

/** What a kind's mapping reads and keeps while the bundle is made. */
export interface BundleContext {
  /** What the resources point to: the Patient and the visits' Encounters. */
  readonly links: Links
  /** Notes a visit whose Encounter is in the bundle, so that later records may point to it. */
  addVisit: (id: number) => void
  /** Keeps the references of a record's resources when an attachment points to the record. */
  relate: (target: keyof AttachmentTargets, id: number, resources: Resource[]) => void
  /** Keeps what a later kind's resources say of a record of an earlier kind (a dose, of its course's medicine). */
  keep: (kind: string, id: number, value: object) => void
  /** What was kept of a record, or undefined. */
  kept: <T extends object>(kind: string, id: number) => T | undefined
}

/**
 * How one kind of a child's records becomes FHIR resources. The kinds come
 * to the bundle in the order their caller gives: each after the records its
 * resources point to (the visits' Encounters first).
 */
export interface FhirMapping<Row = object> {
  resources (rows: Row[], bundle: BundleContext): Resource[]
}

/** A kind's records in memory, or read batch by batch, each opened when its turn comes. */
export interface KindRecords<Rows> { mapping: FhirMapping, rows: Rows }

const entries = (resources: Resource[]): BundleEntry[] => resources.map(entry)

/**
 * Makes a child's resources kind after kind, in bundle order: the Patient
 * (with its gestational age at birth), each kind's resources in the order
 * given, and the attachments last. It keeps only what later kinds point
 * to (the visits' ids, the references of the records that attachments name,
 * and what a kind keeps for a later one), so a bundle can be written batch
 * by batch without holding the child's records.
 */
class BundleBuilder implements BundleContext {
  readonly patient: Resource
  readonly links: Links
  private readonly visitIds = new Set<number>()
  private readonly related = new Map<string, Reference[]>()
  private readonly keeps = new Map<string, object>()

  constructor (private readonly child: FhirChild, private readonly targets: AttachmentTargets) {
    const patient = childPatient(child)
    this.patient = patient
    this.links = linksTo(patient, this.visitIds)
  }

  addVisit (id: number): void {
    this.visitIds.add(id)
  }

  relate (target: keyof AttachmentTargets, id: number, resources: Resource[]): void {
    if (this.targets[target].has(id)) this.related.set(`${target}/${id}`, resources.map(referenceTo))
  }

  keep (kind: string, id: number, value: object): void {
    this.keeps.set(`${kind}/${id}`, value)
  }

  kept<T extends object> (kind: string, id: number): T | undefined {
    return this.keeps.get(`${kind}/${id}`) as T | undefined
  }

  /** The Patient, and its gestational age at birth when it is known. */
  start (): BundleEntry[] {
    const birth = gestationalAgeObservation(this.child, this.links.subject)
    return entries(birth === null ? [this.patient] : [this.patient, birth])
  }

  records (mapping: FhirMapping, rows: object[]): BundleEntry[] {
    return entries(mapping.resources(rows, this))
  }

  documents (attachments: Attachment[]): BundleEntry[] {
    return entries(attachments.map(attachment => {
      const related = [
        ...(attachment.measurementId === null ? [] : this.related.get(`measurements/${attachment.measurementId}`) ?? []),
        ...(attachment.illnessId === null ? [] : this.related.get(`illnesses/${attachment.illnessId}`) ?? [])
      ]
      return attachmentDocument(attachment, this.links, related)
    }))
  }
}

function bundleHead (options: BundleOptions): Omit<Bundle, 'entry'> {
  return { resourceType: 'Bundle', type: 'collection', timestamp: options.timestamp }
}

/** A child's whole record as a FHIR R4 collection Bundle, from records in memory. */
export function bundleOf (child: FhirChild, kinds: Array<KindRecords<object[]>>, attachments: Attachment[], options: BundleOptions): Bundle {
  const builder = new BundleBuilder(child, {
    measurements: new Set(attachments.flatMap(attachment => attachment.measurementId ?? [])),
    illnesses: new Set(attachments.flatMap(attachment => attachment.illnessId ?? []))
  })
  return {
    ...bundleHead(options),
    entry: [
      ...builder.start(),
      ...kinds.flatMap(({ mapping, rows }) => builder.records(mapping, rows)),
      ...builder.documents(attachments)
    ]
  }
}

/**
 * The same bundle as `bundleOf`, its head and then its entries batch by
 * batch as the records are read: memory holds one batch and the few
 * references later records need, whatever the size of the child's record.
 */
export function streamedBundle (
  child: FhirChild,
  targets: AttachmentTargets,
  kinds: Array<KindRecords<() => AsyncIterable<object[]>>>,
  attachments: () => AsyncIterable<Attachment[]>,
  options: BundleOptions
): { head: Omit<Bundle, 'entry'>, entries: AsyncIterable<BundleEntry[]> } {
  const builder = new BundleBuilder(child, targets)
  return {
    head: bundleHead(options),
    entries: (async function * () {
      yield builder.start()
      for (const { mapping, rows } of kinds) {
        for await (const batch of rows()) yield builder.records(mapping, batch)
      }
      for await (const batch of attachments()) yield builder.documents(batch)
    })()
  }
}
