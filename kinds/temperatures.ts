import { Type, type Static } from '@sinclair/typebox'
import { fullUrl, IPS_PARTS, resourceId, VitalSigns, vitalSignObservation, type FhirMapping, type Links, type Observation } from '../lib/fhir'
import { FreeText, Id, Nullable, Timestamp } from '../lib/schemas'
import { storedFields } from './columns'
import { recordSchema } from './record-schema'
import { illnessKind, TemperatureC } from './illnesses'
import { kindNames, summaryIn, type RecordKind } from './kind'

export const TEMPERATURE_METHODS = ['oral', 'rectal', 'axillary', 'ear', 'forehead'] as const

/** An RFC 3339 timestamp with its offset: a date alone, or a time without a zone, is refused. */
const TakenAt = Type.String({
  format: 'date-time',
  description: 'when the temperature was taken, RFC 3339 with its offset (2024-05-17T08:30:00+02:00 or 2024-05-17T06:30:00Z); answered in UTC. Not before the child\'s date of birth (as it began anywhere: 00:00 at UTC+14) and not more than a day after now',
  examples: ['2024-05-17T08:30:00+02:00']
})

export const TemperatureMethod = Type.String({ enum: [...TEMPERATURE_METHODS], description: 'how it was taken' })

export const TemperatureFields = {
  takenAt: TakenAt,
  temperatureC: { ...TemperatureC, description: 'body temperature in °C, 34 to 43, at most 2 decimals' },
  method: Type.Optional(Nullable(TemperatureMethod)),
  notes: Type.Optional(Nullable(FreeText))
}

export const Temperature = recordSchema('Temperature', {
  illnessId: Id,
  takenAt: Timestamp,
  temperatureC: Type.Number(),
  method: Nullable(TemperatureMethod),
  notes: Nullable(Type.String())
}, 'A body temperature reading taken during an illness. It belongs to its illness for good (its illnessId and childId never change) and goes when the illness is deleted. The illness answers the highest reading as maxTemperatureC, and as temperatureC.')
export type Temperature = Static<typeof Temperature>

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

const SCOPE = 'Within the family scope of the illness\'s child: any member reads, an owner or member writes; an illness of another family is a 403, one that does not exist a 404.'

export const temperatureKind: RecordKind<'temperature', 'temperatures', 'temperatures'> = {
  ...kindNames('temperature', 'temperatures', 'temperatures', 9),
  noun: 'temperature reading',
  fhir: temperatureMapping,
  summary: summaryIn('illnesses', IPS_PARTS.vitalSigns, 'Observation'),
  // A reading is listed and created under its illness.
  parent: { kind: illnessKind, param: 'illnessId', column: 'illness_id' },
  descriptions: {
    list: `Oldest first by default. from and to are UTC dates of takenAt, inclusive. The ETag changes with any change of the child's records. ${SCOPE}`,
    create: `The reading belongs to the illness and its child for good. When it is the illness's new highest, the illness changes too (maxTemperatureC, temperatureC, version). ${SCOPE}`,
    exported: 'every temperature reading of the child\'s illnesses, oldest first (by takenAt); each names its illness by illnessId. Archives written before readings existed have no such list',
    change: '`temperature` is a temperature reading of an illness (its record a Temperature, childId the illness\'s child). A reading that changes its illness\'s highest temperature comes with an `illness` change `updated` of that illness'
  },
  ...storedFields(Temperature, TemperatureFields),
  dates: [],
  timestamps: ['takenAt'],
  sorts: { takenAt: 'taken_at', createdAt: 'created_at' },
  defaultSort: 'takenAt'
}
