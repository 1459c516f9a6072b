import { resourceId } from './ids'
import type { FhirChild } from './records'
import type { Observation, Reference } from './resources'
import { LOINC, UCUM } from './vital-signs'

const GESTATIONAL_AGE_AT_BIRTH = { system: LOINC, code: '76516-4', display: 'Gestational age at birth' }

/**
 * The child's gestational age at birth, dated at birth, in weeks (the days as
 * a fraction of a week, 2 decimals); null when it is unknown.
 */
export function gestationalAgeObservation (child: FhirChild, subject: Reference): Observation | null {
  const weeks = child.gestationalAgeAtBirthWeeks
  if (weeks === null) return null
  const days = child.gestationalAgeAtBirthDays ?? 0
  return {
    resourceType: 'Observation',
    id: resourceId('child', child.id, 'gestational-age'),
    meta: { lastUpdated: child.updatedAt },
    status: 'final',
    code: { coding: [GESTATIONAL_AGE_AT_BIRTH], text: GESTATIONAL_AGE_AT_BIRTH.display },
    subject,
    effectiveDateTime: child.dateOfBirth,
    valueQuantity: { value: Math.round((weeks + days / 7) * 100) / 100, unit: 'wk', system: UCUM, code: 'wk' }
  }
}
