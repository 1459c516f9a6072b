import { entry, fullUrl, referenceTo, uuidV5, EXPORT_NAMESPACE } from './ids'
import type { Bundle, BundleEntry, CodeableConcept, Composition, CompositionSection, Reference, Resource } from './resources'
import { LOINC } from './vital-signs'

/** What a shared summary may hold, as a share names it. */
export const SUMMARY_SECTIONS = ['growth', 'immunizations', 'illnesses', 'medications', 'visits', 'attachments'] as const
export type SummarySection = typeof SUMMARY_SECTIONS[number]

/**
 * A section of the International Patient Summary: its title and LOINC code,
 * the resources of a child's collection it holds and, for a section whose
 * emptiness the IPS states with a resource of its own (no known allergies),
 * that resource. Kinds of records name the sections their resources go in;
 * sections of the same code are one.
 */
export interface SummaryPart {
  title: string
  code: CodeableConcept
  /** The section of a summary that always shows this part, empty or not; other parts show only when they hold something. */
  shownFor?: SummarySection
  /** Whether a resource of the collection belongs in this part. */
  holds: (resource: Resource) => boolean
  /** One line of the part's narrative for a resource, when `describe` below does not say it. */
  describe?: (resource: Resource) => string | undefined
  /** What the part holds when it shows with nothing: a resource saying none is known. Without it, an empty reason says so. */
  none?: (subject: Reference, id: string, timestamp: string) => Resource
}

/** A part's test of the resources it holds: those of the types given. */
export function ofTypes (...types: Array<Resource['resourceType']>): (resource: Resource) => boolean {
  return resource => types.includes(resource.resourceType)
}

/** A section's LOINC code. */
export const loinc = (code: string, display: string): CodeableConcept => ({ coding: [{ system: LOINC, code, display }], text: display })

/** The sections of the International Patient Summary that several kinds of records fill. */
export const IPS_PARTS = {
  problems: { title: 'Problems', code: loinc('11450-4', 'Problem list - Reported'), shownFor: 'illnesses' },
  medications: { title: 'Medications', code: loinc('10160-0', 'History of Medication use Narrative'), shownFor: 'medications' },
  immunizations: { title: 'Immunizations', code: loinc('11369-6', 'History of Immunization Narrative'), shownFor: 'immunizations' },
  vitalSigns: { title: 'Vital signs and growth', code: loinc('8716-3', 'Vital signs'), shownFor: 'growth' },
  pastIllness: { title: 'Past illnesses', code: loinc('11348-0', 'History of Past illness Note') },
  procedures: { title: 'Procedures', code: loinc('47519-4', 'History of Procedures Document') },
  encounters: { title: 'Visits', code: loinc('46240-8', 'History of Hospitalizations+Outpatient visits Narrative'), shownFor: 'visits' }
} satisfies Record<string, Omit<SummaryPart, 'holds'>>

/**
 * The LOINC codes of the summary's sections in the order a summary lists
 * them: problems, allergies and intolerances, medications, immunizations,
 * vital signs, past illnesses, procedures, medical devices, results, then
 * the visits. A section of another code comes after them.
 */
const ORDER = ['11450-4', '48765-2', '10160-0', '11369-6', '8716-3', '11348-0', '47519-4', '46264-8', '30954-2', '46240-8']

/** The attachments' part, after every part of the records. */
const DOCUMENTS: SummaryPart = {
  title: 'Attached documents',
  code: { text: 'Attached documents' },
  shownFor: 'attachments',
  holds: resource => resource.resourceType === 'DocumentReference'
}

const codeOf = (part: { code: CodeableConcept }): string => part.code.coding?.[0]?.code ?? part.code.text ?? ''

/**
 * The parts the kinds name, one a code (holding what any of them holds), in
 * the order of ORDER, those it does not list after them, and the
 * attachments' last.
 */
function partsOf (named: readonly SummaryPart[]): SummaryPart[] {
  const byCode = new Map<string, SummaryPart>()
  for (const part of named) {
    const same = byCode.get(codeOf(part))
    byCode.set(codeOf(part), same === undefined
      ? part
      : { ...same, holds: resource => same.holds(resource) || part.holds(resource), describe: resource => same.describe?.(resource) ?? part.describe?.(resource), none: same.none ?? part.none })
  }
  const rank = (part: SummaryPart): number => ORDER.includes(codeOf(part)) ? ORDER.indexOf(codeOf(part)) : ORDER.length
  return [...[...byCode.values()].sort((a, b) => rank(a) - rank(b)), DOCUMENTS]
}

const SUMMARY_TYPE = loinc('60591-5', 'Patient summary Document')
const NOTHING_KNOWN: CodeableConcept = {
  coding: [{ system: 'http://terminology.hl7.org/CodeSystem/list-empty-reason', code: 'nilknown', display: 'Nil Known' }],
  text: 'No records'
}

function escape (text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
}

/** One line of a section's narrative: the resource's date and what it is. */
export function describe (resource: Resource, part?: SummaryPart): string {
  const own = part?.describe?.(resource)
  if (own !== undefined) return own
  switch (resource.resourceType) {
    case 'Observation': {
      const { value, unit } = resource.valueQuantity
      const chart = resource.method?.text === undefined ? '' : ` (${resource.method.text})`
      return `${resource.effectiveDateTime} ${resource.code.text ?? ''}: ${value} ${unit}${chart}`
    }
    case 'Condition': {
      const until = resource.abatementDateTime === undefined ? '' : ` to ${resource.abatementDateTime}`
      return `${resource.onsetDateTime}${until} ${resource.code?.text ?? 'Illness'}`
    }
    case 'Immunization': {
      const dose = resource.protocolApplied?.[0]?.doseNumberPositiveInt
      return `${resource.occurrenceDateTime} ${resource.vaccineCode.text ?? ''}${dose === undefined ? '' : ` (dose ${dose})`}`
    }
    case 'MedicationStatement':
      return `${resource.effectiveDateTime ?? resource.effectivePeriod?.start ?? ''} ${resource.medicationCodeableConcept.text ?? ''}${resource.dosage?.[0]?.text === undefined ? '' : `: ${resource.dosage[0].text}`}`
    case 'MedicationAdministration': return `${resource.effectiveDateTime} ${resource.medicationCodeableConcept.text ?? ''} given`
    case 'Procedure': return `${resource.performedDateTime} ${resource.code.text ?? ''}`
    case 'Encounter': {
      const who = resource.participant?.[0]?.individual.display
      return `${resource.period.start} ${resource.type[0]?.text ?? ''} visit${who === undefined ? '' : ` with ${who}`}`
    }
    case 'DocumentReference': return `${resource.date.slice(0, 10)} ${resource.content[0]?.attachment.title ?? ''}`
    default: return resource.resourceType
  }
}

function narrative (lines: string[]): CompositionSection['text'] {
  const body = lines.length === 0 ? '<p>No records</p>' : `<ul>${lines.map(line => `<li>${escape(line)}</li>`).join('')}</ul>`
  return { status: 'generated', div: `<div xmlns="http://www.w3.org/1999/xhtml">${body}</div>` }
}

export interface SummaryOptions {
  /** The document's identifier, a UUID: the summary of one share. */
  id: string
  /** When the summary was made, RFC 3339. */
  timestamp: string
  title: string
  /** Who shared it, as the document's author; null when unknown. */
  author: string | null
  /** The sections asked for: each shows, empty or not. */
  sections: readonly SummarySection[]
  /** The IPS sections the kinds of records fill, as each kind names them. */
  parts: readonly SummaryPart[]
}

/**
 * A child's records as an International Patient Summary style FHIR R4
 * document: a `document` Bundle whose first entry is a Composition with the
 * IPS sections the records fill (each section of the summary shows, with a
 * reason, or the resource the IPS states it with, when it is empty), then
 * the Patient and every resource of the collection given. Each section's
 * narrative lists its entries, a line each.
 */
export function patientSummary (collection: Bundle, options: SummaryOptions): Bundle {
  const [patient, ...rest] = collection.entry
  if (patient?.resource.resourceType !== 'Patient') throw new Error('a summary needs the collection of a child, its Patient first')
  const parts = partsOf(options.parts)
  const byPart = new Map<SummaryPart, BundleEntry[]>(parts.map(part => [part, []]))
  for (const entry of rest) {
    const part = parts.find(part => part.holds(entry.resource))
    if (part !== undefined) byPart.get(part)?.push(entry)
  }
  const stated: BundleEntry[] = []
  const section: CompositionSection[] = parts.flatMap(part => {
    let entries = byPart.get(part) ?? []
    if (entries.length === 0 && (part.shownFor === undefined || !options.sections.includes(part.shownFor))) return []
    if (entries.length === 0 && part.none !== undefined) {
      entries = [entry(part.none(referenceTo(patient.resource), uuidV5(EXPORT_NAMESPACE, `summary/${options.id}/${codeOf(part)}`), options.timestamp))]
      stated.push(...entries)
    }
    return [{
      title: part.title,
      code: part.code,
      text: narrative(entries.map(entry => describe(entry.resource, part))),
      ...(entries.length === 0
        ? { emptyReason: NOTHING_KNOWN }
        : { entry: entries.map(entry => ({ reference: entry.fullUrl, type: entry.resource.resourceType })) })
    }]
  })
  const composition: Composition = {
    resourceType: 'Composition',
    id: uuidV5(EXPORT_NAMESPACE, `summary/${options.id}`),
    meta: { lastUpdated: options.timestamp },
    status: 'final',
    type: SUMMARY_TYPE,
    subject: referenceTo(patient.resource),
    date: options.timestamp,
    author: [{ display: options.author ?? 'Child health records' }],
    title: options.title,
    section
  }
  return {
    resourceType: 'Bundle',
    identifier: { system: 'urn:ietf:rfc:3986', value: `urn:uuid:${options.id}` },
    type: 'document',
    timestamp: options.timestamp,
    entry: [{ fullUrl: fullUrl(composition.id), resource: composition }, patient, ...rest.filter(entry => parts.some(part => part.holds(entry.resource))), ...stated]
  }
}
