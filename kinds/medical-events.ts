import { Type, type Static } from '@sinclair/typebox'
import {
  annotations, ifPresent, IPS_PARTS, ofTypes, resourceId,
  type FhirMapping, type Immunization, type Links, type MedicationStatement, type Procedure
} from '../lib/fhir'
import { DATE_PATTERN, FreeText, Id, IsoDate, Name, Nullable } from '../lib/schemas'
import { scheduleById } from '../io/schedules'
import { storedFields } from './columns'
import { recordSchema } from './record-schema'
import type { ChildFacts, Issue } from './rules'
import { kindNames, type RecordKind } from './kind'
import { VisitLink } from './visit-link'

const TYPES = ['vaccine', 'procedure', 'medication'] as const

export const MedicalEventType = Type.String({ enum: [...TYPES] })

const ONLY_VACCINE = 'Only for a vaccine: set on another type, a 400.'

const DoseNumber = Type.Integer({ minimum: 1, maximum: 20, description: `The dose's number in its series, 1 to 20. ${ONLY_VACCINE}` })
const LotNumber = Type.String({ minLength: 1, maxLength: 100, description: `The vaccine's lot number, at most 100 characters. ${ONLY_VACCINE}` })
const Site = Type.String({ minLength: 1, maxLength: 100, description: `Where on the body the dose was given (e.g. left thigh), at most 100 characters. ${ONLY_VACCINE}` })
const Vaccine = Type.String({
  pattern: '^[A-Za-z0-9-]{1,20}$',
  examples: ['DTaP'],
  description: `The series of the child's vaccine schedule this is a dose of, by its code (GET /api/schedules), e.g. DTaP; with doseNumber it records that dose of the schedule. It must be a series of the schedule the child follows (scheduleId), compared exactly: a code of no series, or a child without a schedule, is a 400. ${ONLY_VACCINE}`
})
const NextDueDate = Type.String({ format: 'date', pattern: DATE_PATTERN, examples: ['2024-08-17'], description: `When the next dose is due: not before date, and may lie in the future. ${ONLY_VACCINE}` })

export const MedicalEventFields = {
  date: IsoDate,
  type: MedicalEventType,
  name: Name(200),
  description: Type.Optional(Nullable(FreeText)),
  visitId: VisitLink('date'),
  doseNumber: Type.Optional(Nullable(DoseNumber)),
  lotNumber: Type.Optional(Nullable(LotNumber)),
  site: Type.Optional(Nullable(Site)),
  nextDueDate: Type.Optional(Nullable(NextDueDate)),
  vaccine: Type.Optional(Nullable(Vaccine))
}

/** The fields of a dose, which only a vaccine has. */
const DOSE_FIELDS = ['doseNumber', 'lotNumber', 'site', 'nextDueDate', 'vaccine']

/** A dose's fields only on a vaccine; the next dose not due before this one was given. */
function doseIssues (body: Record<string, unknown>): Issue[] {
  const issues: Issue[] = []
  if (body.type !== 'vaccine') {
    for (const field of DOSE_FIELDS) {
      if (body[field] !== null && body[field] !== undefined) issues.push({ path: `/body/${field}`, message: 'only for a vaccine' })
    }
  }
  if (typeof body.nextDueDate === 'string' && typeof body.date === 'string' && body.nextDueDate < body.date) {
    issues.push({ path: '/body/nextDueDate', message: 'must not be before date' })
  }
  return issues
}

/** A vaccine names a series of the schedule its child follows. */
const seriesRules = {
  applies: (body: Record<string, unknown>): boolean => body.type === 'vaccine' && typeof body.vaccine === 'string',
  check (body: Record<string, unknown>, child: ChildFacts): Issue[] {
    const schedule = scheduleById(child.scheduleId)
    if (schedule === undefined) {
      return [{ path: '/body/vaccine', message: 'must be null: the child follows no vaccine schedule (set the child\'s scheduleId first)' }]
    }
    if (schedule.series.some(series => series.code === body.vaccine)) return []
    return [{ path: '/body/vaccine', message: `must be a series of the child's schedule ${schedule.id}: ${schedule.series.map(series => series.code).join(', ')}` }]
  }
}

export const MedicalEvent = recordSchema('MedicalEvent', {
  date: IsoDate,
  type: MedicalEventType,
  name: Type.String(),
  description: Nullable(Type.String()),
  visitId: Nullable(Id),
  doseNumber: Nullable(Type.Integer({ description: 'The dose\'s number in its series; null unless set on a vaccine' })),
  lotNumber: Nullable(Type.String({ description: 'The vaccine\'s lot number; null unless set on a vaccine' })),
  site: Nullable(Type.String({ description: 'Where on the body the dose was given; null unless set on a vaccine' })),
  nextDueDate: Nullable(Type.String({ format: 'date', description: 'When the next dose is due; null unless set on a vaccine' })),
  vaccine: Nullable(Type.String({ description: 'The series of the child\'s vaccine schedule this is a dose of (e.g. DTaP); null unless set on a vaccine' }))
})
export type MedicalEvent = Static<typeof MedicalEvent>

/** A vaccine as an Immunization, a procedure as a Procedure, a medication as a MedicationStatement. */
export function medicalEventResource (event: MedicalEvent, links: Links): Immunization | Procedure | MedicationStatement {
  const id = resourceId('medical-event', event.id)
  const meta = { lastUpdated: event.updatedAt }
  const encounter = links.encounterOf(event.visitId)
  const concept = { text: event.name }
  const note = annotations(event.description)
  switch (event.type as typeof TYPES[number]) {
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

export const medicalEventKind: RecordKind<'medicalEvent', 'medicalEvents', 'medical_events'> = {
  ...kindNames('medicalEvent', 'medicalEvents', 'medical_events', 6),
  fhir: medicalEventMapping,
  summary: {
    shared: {
      immunizations: row => row.type === 'vaccine',
      medications: row => row.type === 'medication',
      visits: row => row.type === 'procedure'
    },
    parts: [
      { ...IPS_PARTS.immunizations, holds: ofTypes('Immunization') },
      { ...IPS_PARTS.medications, holds: ofTypes('MedicationStatement') },
      { ...IPS_PARTS.procedures, holds: ofTypes('Procedure') }
    ]
  },
  filters: { type: { values: TYPES, column: 'type' } },
  ...storedFields(MedicalEvent, MedicalEventFields),
  // nextDueDate is not among them: it may lie in the future.
  dates: ['date'],
  sorts: { date: 'date', type: 'type', createdAt: 'created_at' },
  defaultSort: '-date',
  check: doseIssues,
  childRules: seriesRules
}
