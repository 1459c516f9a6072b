import { fullUrl, referenceTo, resourceId } from './ids'
import type { Patient, Reference } from './resources'

/** What a record's resources point to: the child and the visits' encounters. */
export interface Links {
  dateOfBirth: string
  subject: Reference
  encounterOf: (visitId: number | null) => Reference | undefined
}

/**
 * A link to a visit that is not in the bundle is left out, so that every
 * reference in a bundle resolves inside it. Only the visits' ids are kept:
 * an encounter's reference follows from its visit's id.
 */
export function linksTo (patient: Patient, visitIds: ReadonlySet<number>): Links {
  return {
    dateOfBirth: patient.birthDate,
    subject: referenceTo(patient),
    encounterOf (visitId) {
      if (visitId === null || !visitIds.has(visitId)) return undefined
      return { reference: fullUrl(resourceId('visit', visitId)), type: 'Encounter' }
    }
  }
}
