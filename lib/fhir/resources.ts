/** The parts of FHIR R4 that a child's bundle uses. */

export interface Coding {
  system: string
  code: string
  display?: string
}

export interface CodeableConcept {
  coding?: Coding[]
  text?: string
}

export interface Reference {
  reference: string
  type?: string
  display?: string
}

export interface Quantity {
  value: number
  unit: string
  system: string
  code: string
}

export interface Annotation {
  text: string
}

export interface Meta {
  lastUpdated: string
  profile?: string[]
}

interface Base {
  id: string
  meta: Meta
}

export interface Patient extends Base {
  resourceType: 'Patient'
  name: Array<{ text: string }>
  gender: 'female' | 'male' | 'other'
  birthDate: string
}

export interface Observation extends Base {
  resourceType: 'Observation'
  status: 'final'
  category?: CodeableConcept[]
  code: CodeableConcept
  subject: Reference
  encounter?: Reference
  effectiveDateTime: string
  valueQuantity: Quantity
  method?: CodeableConcept
  focus?: Reference[]
  derivedFrom?: Reference[]
  note?: Annotation[]
}

export interface Condition extends Base {
  resourceType: 'Condition'
  clinicalStatus: CodeableConcept
  code?: CodeableConcept
  subject: Reference
  encounter?: Reference
  onsetDateTime: string
  abatementDateTime?: string
  evidence?: Array<{ code?: CodeableConcept[], detail?: Reference[] }>
  note?: Annotation[]
}

export interface AllergyIntolerance extends Base {
  resourceType: 'AllergyIntolerance'
  clinicalStatus: CodeableConcept
  category?: Array<'food' | 'medication' | 'environment' | 'biologic'>
  criticality?: 'low' | 'high' | 'unable-to-assess'
  code: CodeableConcept
  patient: Reference
  recordedDate?: string
  reaction?: Array<{ manifestation: CodeableConcept[], severity?: 'mild' | 'moderate' | 'severe' }>
  note?: Annotation[]
}

export interface Encounter extends Base {
  resourceType: 'Encounter'
  status: 'finished'
  class: Coding
  type: CodeableConcept[]
  subject: Reference
  participant?: Array<{ individual: { display: string } }>
  period: { start: string }
}

export interface Immunization extends Base {
  resourceType: 'Immunization'
  status: 'completed'
  vaccineCode: CodeableConcept
  patient: Reference
  encounter?: Reference
  occurrenceDateTime: string
  lotNumber?: string
  site?: CodeableConcept
  note?: Annotation[]
  protocolApplied?: Array<{ doseNumberPositiveInt: number }>
}

export interface Procedure extends Base {
  resourceType: 'Procedure'
  status: 'completed'
  code: CodeableConcept
  subject: Reference
  encounter?: Reference
  performedDateTime: string
  note?: Annotation[]
}

export interface Ratio {
  numerator: Quantity
  denominator: Quantity
}

export interface Dosage {
  text?: string
  doseAndRate?: Array<{ doseQuantity: Quantity }>
  maxDosePerPeriod?: Ratio
}

export interface MedicationStatement extends Base {
  resourceType: 'MedicationStatement'
  status: 'completed' | 'active'
  medicationCodeableConcept: CodeableConcept
  subject: Reference
  context?: Reference
  effectiveDateTime?: string
  effectivePeriod?: { start: string, end?: string }
  dosage?: Dosage[]
  note?: Annotation[]
}

export interface MedicationAdministration extends Base {
  resourceType: 'MedicationAdministration'
  status: 'completed'
  medicationCodeableConcept: CodeableConcept
  subject: Reference
  supportingInformation?: Reference[]
  effectiveDateTime: string
  note?: Annotation[]
  dosage?: { dose: Quantity }
}

export interface DocumentReference extends Base {
  resourceType: 'DocumentReference'
  status: 'current'
  subject: Reference
  date: string
  content: Array<{
    /** The file's address (`url`), or the file itself (`data`, base64). */
    attachment: { contentType: string, url?: string, data?: string, title: string, size: number, creation: string }
  }>
  context?: { encounter?: Reference[], related?: Reference[] }
}

export interface Narrative {
  status: 'generated'
  div: string
}

export interface CompositionSection {
  title: string
  code: CodeableConcept
  text: Narrative
  entry?: Reference[]
  emptyReason?: CodeableConcept
}

export interface Composition extends Base {
  resourceType: 'Composition'
  status: 'final'
  type: CodeableConcept
  subject: Reference
  date: string
  /** Who made the summary, by name: the family member who shared it. */
  author: Array<{ display: string }>
  title: string
  section: CompositionSection[]
}

export type Resource =
  | Composition
  | Patient
  | Observation
  | Condition
  | AllergyIntolerance
  | Encounter
  | Immunization
  | Procedure
  | MedicationStatement
  | MedicationAdministration
  | DocumentReference

export interface BundleEntry<R extends Resource = Resource> {
  fullUrl: string
  resource: R
}

export interface Bundle {
  resourceType: 'Bundle'
  /** A document's identifier, the same in every copy of it. */
  identifier?: { system: string, value: string }
  type: 'collection' | 'document'
  timestamp: string
  entry: BundleEntry[]
}
