import type { FhirMapping } from './bundle'
import { annotations, ifPresent } from './fields'
import { resourceId } from './ids'
import type { Links } from './links'
import type { MedicalEvent } from './records'
import type { Immunization, MedicationStatement, Procedure } from './resources'

/** A vaccine as an Immunization, a procedure as a Procedure, a medication as a MedicationStatement. */
export function medicalEventResource (event: MedicalEvent, links: Links): Immunization | Procedure | MedicationStatement {
  const id = resourceId('medical-event', event.id)
  const meta = { lastUpdated: event.updatedAt }
  const encounter = links.encounterOf(event.visitId)
  const concept = { text: event.name }
  const note = annotations(event.description)
  switch (event.type) {
    case 'vaccine':
      return {
        resourceType: 'Immunization',
        id,
        meta,
        status: 'completed',
        vaccineCode: concept,
        patient: links.subject,
        ...ifPresent('encounter', encounter),
        occurrenceDateTime: event.date,
        ...ifPresent('lotNumber', event.lotNumber),
        ...ifPresent('site', event.site === null ? null : { text: event.site }),
        ...note,
        ...ifPresent('protocolApplied', event.doseNumber === null ? null : [{ doseNumberPositiveInt: event.doseNumber }])
      }
    case 'procedure':
      return {
        resourceType: 'Procedure',
        id,
        meta,
        status: 'completed',
        code: concept,
        subject: links.subject,
        ...ifPresent('encounter', encounter),
        performedDateTime: event.date,
        ...note
      }
    case 'medication':
      return {
        resourceType: 'MedicationStatement',
        id,
        meta,
        status: 'completed',
        medicationCodeableConcept: concept,
        subject: links.subject,
        ...ifPresent('context', encounter),
        effectiveDateTime: event.date,
        ...note
      }
  }
}

export const medicalEventMapping: FhirMapping<MedicalEvent> = {
  resources: (events, bundle) => events.map(event => medicalEventResource(event, bundle.links))
}
