import { fullUrl, referenceTo, uuidV5, EXPORT_NAMESPACE } from './ids'
import type { Bundle, BundleEntry, CodeableConcept, Composition, CompositionSection, Resource } from './resources'
import { LOINC } from './vital-signs'

/** What a shared summary may hold, as a share names it. */
export const SUMMARY_SECTIONS = ['growth', 'immunizations', 'illnesses', 'medications', 'visits', 'attachments'] as const
export type SummarySection = typeof SUMMARY_SECTIONS[number]

type Part = 'problems' | 'medications' | 'immunizations' | 'vitalSigns' | 'pastIllness' | 'procedures' | 'encounters' | 'documents'

interface PartSpec {
  part: Part
  title: string
  code: CodeableConcept
  /** The section of a summary that always shows this part, empty or not; other parts show only when they hold something. */
  shownFor?: SummarySection
}

const loinc = (code: string, display: string): CodeableConcept => ({ coding: [{ system: LOINC, code, display }], text: display })

/** The sections of the International Patient Summary a child's records fill, in the IPS's order. */
const PARTS: PartSpec[] = [
  { part: 'problems', title: 'Problems', code: loinc('11450-4', 'Problem list - Reported'), shownFor: 'illnesses' },
  { part: 'medications', title: 'Medications', code: loinc('10160-0', 'History of Medication use Narrative'), shownFor: 'medications' },
  { part: 'immunizations', title: 'Immunizations', code: loinc('11369-6', 'History of Immunization Narrative'), shownFor: 'immunizations' },
  { part: 'vitalSigns', title: 'Vital signs and growth', code: loinc('8716-3', 'Vital signs'), shownFor: 'growth' },
  { part: 'pastIllness', title: 'Past illnesses', code: loinc('11348-0', 'History of Past illness Note') },
  { part: 'procedures', title: 'Procedures', code: loinc('47519-4', 'History of Procedures Document') },
  { part: 'encounters', title: 'Visits', code: loinc('46240-8', 'History of Hospitalizations+Outpatient visits Narrative'), shownFor: 'visits' },
  { part: 'documents', title: 'Attached documents', code: { text: 'Attached documents' }, shownFor: 'attachments' }
]

const SUMMARY_TYPE = loinc('60591-5', 'Patient summary Document')
const NOTHING_KNOWN: CodeableConcept = {
  coding: [{ system: 'http://terminology.hl7.org/CodeSystem/list-empty-reason', code: 'nilknown', display: 'Nil Known' }],
  text: 'No records'
}

/** The part of the summary a resource belongs to; the Patient belongs to none. */
function partOf (resource: Resource): Part | null {
  switch (resource.resourceType) {
    case 'Observation': return 'vitalSigns'
    case 'Condition': return resource.clinicalStatus.coding?.[0]?.code === 'active' ? 'problems' : 'pastIllness'
    case 'Immunization': return 'immunizations'
    case 'MedicationStatement':
    case 'MedicationAdministration': return 'medications'
    case 'Procedure': return 'procedures'
    case 'Encounter': return 'encounters'
    case 'DocumentReference': return 'documents'
    default: return null
  }
}

function escape (text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
}

/** One line of a section's narrative: the resource's date and what it is. */
export function describe (resource: Resource): string {
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
}

/**
 * A child's records as an International Patient Summary style FHIR R4
 * document: a `document` Bundle whose first entry is a Composition with the
 * IPS sections the records fill (each section of the summary shows, with a
 * reason when it is empty), then the Patient and every resource of the
 * collection given. Each section's narrative lists its entries, a line each.
 */
export function patientSummary (collection: Bundle, options: SummaryOptions): Bundle {
  const [patient, ...rest] = collection.entry
  if (patient?.resource.resourceType !== 'Patient') throw new Error('a summary needs the collection of a child, its Patient first')
  const byPart = new Map<Part, BundleEntry[]>()
  for (const entry of rest) {
    const part = partOf(entry.resource)
    if (part === null) continue
    const entries = byPart.get(part)
    if (entries === undefined) byPart.set(part, [entry])
    else entries.push(entry)
  }
  const section: CompositionSection[] = PARTS.flatMap(({ part, title, code, shownFor }) => {
    const entries = byPart.get(part) ?? []
    if (entries.length === 0 && (shownFor === undefined || !options.sections.includes(shownFor))) return []
    return [{
      title,
      code,
      text: narrative(entries.map(entry => describe(entry.resource))),
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
    entry: [{ fullUrl: fullUrl(composition.id), resource: composition }, patient, ...rest.filter(entry => partOf(entry.resource) !== null)]
  }
}
