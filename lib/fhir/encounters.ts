import type { FhirMapping } from './bundle'
import { ifPresent } from './fields'
import { resourceId } from './ids'
import type { Visit } from './records'
import type { Encounter, Reference } from './resources'

const ACT_CODE = 'http://terminology.hl7.org/CodeSystem/v3-ActCode'

/** A visit as a finished ambulatory Encounter; its notes have no place in an R4 Encounter. */
export function visitEncounter (visit: Visit, subject: Reference): Encounter {
  return {
    resourceType: 'Encounter',
    id: resourceId('visit', visit.id),
    meta: { lastUpdated: visit.updatedAt },
    status: 'finished',
    class: { system: ACT_CODE, code: 'AMB', display: 'ambulatory' },
    type: [{ text: visit.type }],
    subject,
    ...ifPresent('participant', visit.provider === null ? null : [{ individual: { display: visit.provider } }]),
    period: { start: visit.date }
  }
}

/** The visits first: the other records point to their Encounters. */
export const visitMapping: FhirMapping<Visit> = {
  resources (visits, bundle) {
    for (const visit of visits) bundle.addVisit(visit.id)
    return visits.map(visit => visitEncounter(visit, bundle.links.subject))
  }
}
