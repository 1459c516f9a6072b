import { Type, type Static } from '@sinclair/typebox'
import { ifPresent, IPS_PARTS, resourceId, type Encounter, type FhirMapping, type Reference } from '../lib/fhir'
import { FreeText, IsoDate, Name, Nullable, StrictObject } from '../lib/schemas'
import { storedFields } from './columns'
import { recordSchema } from './record-schema'
import { kindNames, summaryIn, type RecordKind } from './kind'
import { checkValues, measurementKind, MeasurementValues } from './measurements'
import { latestAllowedDate, type Issue } from './rules'

export const VISIT_TYPES = ['wellness', 'sick', 'injury', 'vision', 'dental'] as const

/** How many days ahead a visit may lie: a visit is an appointment too. */
export const VISIT_DAYS_AHEAD = 730

export const VisitType = Type.String({ enum: [...VISIT_TYPES] })

/** A visit's date, as its body takes it. */
const VisitDate = Type.String({
  ...IsoDate,
  description: `The day of the visit, past or ahead: not before the child's date of birth, and at most ${VISIT_DAYS_AHEAD} days ahead ` +
    '(after the latest date other records may have, today in UTC plus a day of slack for time zones). A visit ahead is an appointment: ' +
    'it takes no measurement, and no record may link to it before its own date. Changing the date of a visit that records link to ' +
    'is refused (400) when a linked record would come before it.'
})

export const VisitFields = {
  date: VisitDate,
  type: VisitType,
  provider: Type.Optional(Nullable(Name(200))),
  notes: Type.Optional(Nullable(FreeText))
}

export const Visit = recordSchema('Visit', {
  date: IsoDate,
  type: VisitType,
  provider: Nullable(Type.String()),
  notes: Nullable(Type.String())
})
export type Visit = Static<typeof Visit>

export const VisitCreateFields = {
  measurement: Type.Optional(Nullable(StrictObject(MeasurementValues, {
    description: 'A measurement taken at the visit: created with the visit\'s date and linked to it; not with a visit after today (400)'
  })))
}

/** A create's answer: the visit's fields and the measurement created with it. */
export const CreatedVisit = Type.Object({
  ...Visit.properties,
  measurement: Type.Optional(Type.Ref('Measurement'))
}, { title: 'CreatedVisit', description: 'The visit, with the measurement created with it when there was one' })

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

export const visitKind: RecordKind<'visit', 'visits', 'visits'> = {
  ...kindNames('visit', 'visits', 'visits', 5),
  fhir: visitMapping,
  summary: summaryIn('visits', IPS_PARTS.encounters, 'Encounter'),
  filters: { type: { values: VISIT_TYPES, column: 'type' } },
  createFields: VisitCreateFields,
  createSchema: CreatedVisit,
  // A visit with a measurement: both are written in one transaction, or neither.
  createsWith: { field: 'measurement', kind: measurementKind, link: visit => ({ measuredAt: visit.date, visitId: visit.id }) },
  ...storedFields(Visit, VisitFields),
  dates: ['date'],
  sorts: { date: 'date', type: 'type', createdAt: 'created_at' },
  defaultSort: '-date',
  ahead: { date: VISIT_DAYS_AHEAD },
  linkedAs: 'visitId',
  // The measurement a visit may be created with: taken on the visit's day, so not at a visit ahead.
  check: body => {
    const measurement = body.measurement as Record<string, unknown> | null | undefined
    if (measurement == null) return []
    const issues: Issue[] = checkValues(measurement, '/body/measurement')
    if (typeof body.date === 'string' && body.date > latestAllowedDate()) issues.push({ path: '/body/measurement', message: 'must not be given with a visit after today' })
    return issues
  }
}
