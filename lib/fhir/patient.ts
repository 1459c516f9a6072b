import { resourceId } from './ids'
import type { FhirChild } from './records'
import type { Patient } from './resources'

export function childPatient (child: FhirChild): Patient {
  return {
    resourceType: 'Patient',
    id: resourceId('child', child.id),
    meta: { lastUpdated: child.updatedAt },
    name: [{ text: child.name }],
    gender: child.sex,
    birthDate: child.dateOfBirth
  }
}
