import { referenceTo } from './ids'
import type { Encounter, Patient, Reference } from './resources'

/** What a record's resources point to: the child and the visits' encounters. */
export interface Links {
  dateOfBirth: string
  subject: Reference
  encounterOf: (visitId: number | null) => Reference | undefined
}

/**
 * A link to a visit that is not in the bundle is left out, so that every
 * reference in a bundle resolves inside it.
 */
export function linksTo (patient: Patient, encounters: Map<number, Encounter>): Links {
  return {
    dateOfBirth: patient.birthDate,
    subject: referenceTo(patient),
    encounterOf (visitId) {
      const encounter = visitId === null ? undefined : encounters.get(visitId)
      return encounter === undefined ? undefined : referenceTo(encounter)
    }
  }
}
