import { Type, type Static } from '@sinclair/typebox'
import {
  annotations, ifPresent, IPS_PARTS, ofTypes, referenceTo, resourceId, VitalSigns, vitalSignObservation,
  type Condition, type FhirMapping, type Links, type Observation, type Resource
} from '../lib/fhir'
import { FreeText, Id, IsoDate, Nullable } from '../lib/schemas'
import { storedFields } from './columns'
import { recordSchema } from './record-schema'
import { kindNames, type RecordKind } from './kind'
import { VisitLink } from './visit-link'

/** A body temperature in °C, as an illness and its readings take it. */
export const TemperatureC = Type.Number({ minimum: 34, maximum: 43, 'x-max-decimals': 2 })

export const IllnessFields = {
  startDate: IsoDate,
  endDate: Type.Optional(Nullable(IsoDate)),
  diagnosis: Type.Optional(Nullable(FreeText)),
  symptoms: Type.Optional(Nullable(FreeText)),
  medications: Type.Optional(Nullable(FreeText)),
  temperatureC: Type.Optional(Nullable({ ...TemperatureC, description: 'the temperature noted with the illness, °C; while the illness has temperature readings, answers show their highest instead (the value sent is still stored, and shows again once no reading is left)' })),
  visitId: VisitLink('endDate', true),
  notes: Type.Optional(Nullable(FreeText))
}

export const Illness = recordSchema('Illness', {
  startDate: IsoDate,
  endDate: Nullable(IsoDate),
  diagnosis: Nullable(Type.String()),
  symptoms: Nullable(Type.String()),
  medications: Nullable(Type.String()),
  temperatureC: Nullable(Type.Number({ description: 'the highest temperature reading (°C) while the illness has readings (equal to maxTemperatureC), otherwise the temperature noted with the illness; kept for clients of the single temperature' })),
  maxTemperatureC: Nullable(Type.Number({ description: 'the highest of the illness\'s temperature readings (°C, GET /api/illnesses/{illnessId}/temperatures); null without readings. A reading that changes it changes the illness too: its version and ETag move and the changes feed has an illness `updated`' })),
  visitId: Nullable(Id),
  notes: Nullable(Type.String()),
  status: Type.String({ enum: ['current', 'finished'], description: '`current` while there is no endDate' })
})
export type Illness = Static<typeof Illness>

/**
 * An illness answers its status, derived from its end date, and as its
 * `temperatureC` its highest reading while it has readings, the temperature
 * stored with it otherwise.
 */
export function withIllnessStatus<T extends Record<string, unknown>> (row: T): T & { status: 'current' | 'finished' } {
  const highest = row.maxTemperatureC ?? null
  return {
    ...row,
    ...(highest === null ? {} : { temperatureC: highest }),
    status: row.endDate === null || row.endDate === undefined ? 'current' : 'finished'
  }
}

const CONDITION_CLINICAL = 'http://terminology.hl7.org/CodeSystem/condition-clinical'

/**
 * The temperature noted with an illness, dated at its start. An illness with
 * temperature readings has none: each reading is an Observation of its own.
 */
export function illnessTemperature (illness: Illness, links: Links): Observation | null {
  if (illness.temperatureC === null || (illness.maxTemperatureC ?? null) !== null) return null
  return vitalSignObservation({
    id: resourceId('illness', illness.id, 'body-temperature'),
    lastUpdated: illness.updatedAt,
    sign: VitalSigns.bodyTemperature,
    value: illness.temperatureC,
    date: illness.startDate,
    subject: links.subject,
    encounter: links.encounterOf(illness.visitId),
    notes: null
  })
}

export function illnessCondition (illness: Illness, links: Links, temperature: Observation | null): Condition {
  const clinicalStatus = illness.status === 'current' ? 'active' : 'resolved'
  const evidence = [
    ...(illness.symptoms === null ? [] : [{ code: [{ text: illness.symptoms }] }]),
    ...(temperature === null ? [] : [{ detail: [referenceTo(temperature)] }])
  ]
  return {
    resourceType: 'Condition',
    id: resourceId('illness', illness.id),
    meta: { lastUpdated: illness.updatedAt },
    clinicalStatus: { coding: [{ system: CONDITION_CLINICAL, code: clinicalStatus }] },
    ...ifPresent('code', illness.diagnosis === null ? null : { text: illness.diagnosis }),
    subject: links.subject,
    ...ifPresent('encounter', links.encounterOf(illness.visitId)),
    onsetDateTime: illness.startDate,
    ...ifPresent('abatementDateTime', illness.endDate),
    ...ifPresent('evidence', evidence.length === 0 ? null : evidence),
    ...annotations(illness.notes, illness.medications === null ? null : `Medications: ${illness.medications}`)
  }
}

/** Each illness a Condition, with the temperature noted with it when it has no readings. */
export const illnessMapping: FhirMapping<Illness> = {
  resources: (illnesses, bundle) => illnesses.flatMap(illness => {
    const temperature = illnessTemperature(illness, bundle.links)
    const condition = illnessCondition(illness, bundle.links, temperature)
    bundle.relate('illnesses', illness.id, [condition])
    return temperature === null ? [condition] : [condition, temperature]
  })
}

/** An illness's Condition while it goes on. */
const active = (resource: Resource): boolean => resource.resourceType === 'Condition' && resource.clinicalStatus.coding?.[0]?.code === 'active'

export const illnessKind: RecordKind<'illness', 'illnesses', 'illnesses'> = {
  ...kindNames('illness', 'illnesses', 'illnesses', 7),
  fhir: illnessMapping,
  summary: {
    shared: { illnesses: true },
    parts: [
      // An illness that goes on is a problem, one that ended a past illness.
      { ...IPS_PARTS.problems, holds: active },
      { ...IPS_PARTS.pastIllness, holds: resource => resource.resourceType === 'Condition' && !active(resource) },
      { ...IPS_PARTS.vitalSigns, holds: ofTypes('Observation') }
    ]
  },
  filters: { status: { values: ['current', 'finished'], column: 'end_date', isNull: { current: true, finished: false } } },
  // The status is derived, not stored.
  ...storedFields(Illness, IllnessFields, { fields: ['status'], toResponse: withIllnessStatus }),
  dates: ['startDate', 'endDate'],
  // A visit during the illness is the illness's visit: up to its end, or today while it goes on.
  visitBy: { field: 'endDate', ongoing: true },
  sorts: { startDate: 'start_date', endDate: 'end_date', createdAt: 'created_at' },
  defaultSort: '-startDate',
  check: body => typeof body.endDate === 'string' && body.endDate < (body.startDate as string)
    ? [{ path: '/body/endDate', message: 'must not be before startDate' }]
    : [],
  toResponse: withIllnessStatus,
  // Written with its highest reading, so that its readings, written next, leave it as it is: one change a row.
  archiveDerived: {
    max_temperature_c: `(
      select max((t.row->>'temperature_c')::numeric) from import_rows t
      where t.kind = 'temperatures' and t.child = r.child and (t.row->>'illness_id')::integer = r.old_id
    )`
  },
  derivedSql: {
    temperatureC: 'coalesce(r.max_temperature_c, r.temperature_c)::float8',
    status: "case when r.end_date is null then 'current' else 'finished' end"
  }
}
