import { annotations, ifPresent } from './fields'
import type { Observation, Reference } from './resources'

export const LOINC = 'http://loinc.org'
export const UCUM = 'http://unitsofmeasure.org'
const OBSERVATION_CATEGORY = 'http://terminology.hl7.org/CodeSystem/observation-category'
const PROFILE_BASE = 'http://hl7.org/fhir/StructureDefinition/'

export interface VitalSign {
  loinc: string
  display: string
  unit: string
  ucum: string
  /** The FHIR R4 vital-signs profile of this code, besides the generic one. */
  profile?: string
}

/** The LOINC codes and UCUM units of the values a child's records hold. */
export const VitalSigns = {
  bodyWeight: { loinc: '29463-7', display: 'Body weight', unit: 'kg', ucum: 'kg', profile: 'bodyweight' },
  bodyLength: { loinc: '8306-3', display: 'Body height --lying', unit: 'cm', ucum: 'cm' },
  bodyHeight: { loinc: '8302-2', display: 'Body height', unit: 'cm', ucum: 'cm', profile: 'bodyheight' },
  headCircumference: { loinc: '9843-4', display: 'Head Occipital-frontal circumference', unit: 'cm', ucum: 'cm', profile: 'headcircum' },
  bmi: { loinc: '39156-5', display: 'Body mass index (BMI) [Ratio]', unit: 'kg/m2', ucum: 'kg/m2', profile: 'bmi' },
  bodyTemperature: { loinc: '8310-5', display: 'Body temperature', unit: '°C', ucum: 'Cel', profile: 'bodytemp' }
} satisfies Record<string, VitalSign>

export interface VitalSignValues {
  id: string
  lastUpdated: string
  sign: VitalSign
  value: number
  date: string
  subject: Reference
  encounter?: Reference
  notes: string | null
  /** How the value was taken, as text. */
  method?: string | null
  /** What the value is about besides the patient: an illness's Condition. */
  focus?: Reference
  derivedFrom?: Reference[]
}

/** An Observation that meets the FHIR R4 vital-signs profiles it names. */
export function vitalSignObservation (values: VitalSignValues): Observation {
  const { sign } = values
  const profiles = [`${PROFILE_BASE}vitalsigns`]
  if (sign.profile !== undefined) profiles.push(`${PROFILE_BASE}${sign.profile}`)
  return {
    resourceType: 'Observation',
    id: values.id,
    meta: { lastUpdated: values.lastUpdated, profile: profiles },
    status: 'final',
    category: [{
      coding: [{ system: OBSERVATION_CATEGORY, code: 'vital-signs', display: 'Vital Signs' }],
      text: 'Vital Signs'
    }],
    code: { coding: [{ system: LOINC, code: sign.loinc, display: sign.display }], text: sign.display },
    subject: values.subject,
    ...ifPresent('encounter', values.encounter),
    effectiveDateTime: values.date,
    valueQuantity: { value: values.value, unit: sign.unit, system: UCUM, code: sign.ucum },
    ...ifPresent('method', values.method === null || values.method === undefined ? null : { text: values.method }),
    ...ifPresent('focus', values.focus === undefined ? null : [values.focus]),
    ...ifPresent('derivedFrom', values.derivedFrom),
    ...annotations(values.notes)
  }
}
