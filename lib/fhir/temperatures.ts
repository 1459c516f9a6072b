import type { FhirMapping } from './bundle'
import { fullUrl, resourceId } from './ids'
import type { Links } from './links'
import type { Temperature } from './records'
import type { Observation } from './resources'
import { VitalSigns, vitalSignObservation } from './vital-signs'

/**
 * A temperature reading as a body temperature Observation at the moment it
 * was taken, how it was taken as its method, about its illness's Condition
 * (every illness of the child has one in the bundle).
 */
export function temperatureObservation (reading: Temperature, links: Links): Observation {
  return vitalSignObservation({
    id: resourceId('temperature', reading.id),
    lastUpdated: reading.updatedAt,
    sign: VitalSigns.bodyTemperature,
    value: reading.temperatureC,
    date: reading.takenAt,
    subject: links.subject,
    notes: reading.notes,
    method: reading.method,
    focus: { reference: fullUrl(resourceId('illness', reading.illnessId)), type: 'Condition' }
  })
}

/** After the illnesses, whose Conditions the readings are about. */
export const temperatureMapping: FhirMapping<Temperature> = {
  resources: (readings, bundle) => readings.map(reading => temperatureObservation(reading, bundle.links))
}
