import { resourceId } from './ids'
import type { Child } from './records'
import type { Patient } from './resources'

export function childPatient (child: Child): Patient {
  return {
    resourceType: 'Patient',
    id: resourceId('child', child.id),
    meta: { lastUpdated: child.updatedAt },
    name: [{ text: child.name }],
    gender: child.sex,
    birthDate: child.dateOfBirth
  }
}
