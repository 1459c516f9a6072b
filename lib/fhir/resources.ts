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

export interface MedicationStatement extends Base {
  resourceType: 'MedicationStatement'
  status: 'completed'
  medicationCodeableConcept: CodeableConcept
  subject: Reference
  context?: Reference
  effectiveDateTime: string
  note?: Annotation[]
}

export interface DocumentReference extends Base {
  resourceType: 'DocumentReference'
  status: 'current'
  subject: Reference
  date: string
  content: Array<{
    attachment: { contentType: string, url: string, title: string, size: number, creation: string }
  }>
  context?: { encounter?: Reference[], related?: Reference[] }
}

export type Resource =
  | Patient
  | Observation
  | Condition
  | Encounter
  | Immunization
  | Procedure
  | MedicationStatement
  | DocumentReference

export interface BundleEntry<R extends Resource = Resource> {
  fullUrl: string
  resource: R
}

export interface Bundle {
  resourceType: 'Bundle'
  type: 'collection'
  timestamp: string
  entry: BundleEntry[]
}
