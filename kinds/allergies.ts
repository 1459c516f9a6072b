import { Type, type Static } from '@sinclair/typebox'
import { loinc, ofTypes, resourceId, type AllergyIntolerance, type FhirMapping, type Reference, type Resource, type SummaryPart } from '../lib/fhir'
import { FreeText, IsoDate, Name, Nullable } from '../lib/schemas'
import { storedFields } from './columns'
import { recordSchema } from './record-schema'
import { kindNames, type RecordKind } from './kind'

const CATEGORIES = ['food', 'medication', 'environment', 'other'] as const
const SEVERITIES = ['mild', 'moderate', 'severe'] as const
const STATUSES = ['active', 'resolved'] as const

export const AllergyCategory = Type.String({ enum: [...CATEGORIES], description: 'what the substance is' })
export const AllergySeverity = Type.String({ enum: [...SEVERITIES], description: 'how bad the reaction is' })
export const AllergyStatus = Type.String({ enum: [...STATUSES], description: '`active` while the allergy lasts, `resolved` once outgrown' })

export const AllergyFields = {
  date: { ...IsoDate, description: 'when the allergy was noted' },
  substance: { ...Name(200), description: 'what the child reacts to, 1 to 200 characters (e.g. Peanuts, Penicillin)' },
  category: Type.Optional(Nullable(AllergyCategory)),
  reaction: Type.Optional(Nullable({ ...FreeText, description: 'what the reaction is (e.g. hives, swelling of the lips)' })),
  severity: Type.Optional(Nullable(AllergySeverity)),
  status: Type.Optional(Nullable({ ...AllergyStatus, description: '`active` while the allergy lasts, `resolved` once outgrown; omitted or null is active (on a PUT too), a PATCH without it keeps it' })),
  notes: Type.Optional(Nullable(FreeText))
}

export const Allergy = recordSchema('Allergy', {
  date: IsoDate,
  substance: Type.String(),
  category: Nullable(AllergyCategory),
  reaction: Nullable(Type.String()),
  severity: Nullable(AllergySeverity),
  status: AllergyStatus,
  notes: Nullable(Type.String())
}, 'An allergy or intolerance of a child: the substance, what kind of substance, the reaction and how severe it is, and whether it lasts. A shared summary\'s medications section lists them, or says that none is known.')
export type Allergy = Static<typeof Allergy>

const CLINICAL = 'http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical'
/** How the International Patient Summary writes that a patient has no known allergy. */
const ABSENT_UNKNOWN = 'http://hl7.org/fhir/uv/ips/CodeSystem/absent-unknown-uv-ips'

const clinicalStatus = (code: string) => ({ coding: [{ system: CLINICAL, code }] })

/**
 * An allergy as an AllergyIntolerance: its status as the clinical status,
 * the substance as the code's text, its category where FHIR has one, the
 * reaction as a manifestation with its severity, and a high criticality for
 * a severe one (low for a mild or moderate one).
 */
export function allergyIntolerance (allergy: Allergy, subject: Reference): AllergyIntolerance {
  const category = allergy.category === null || allergy.category === 'other' ? null : allergy.category as 'food' | 'medication' | 'environment'
  const severity = allergy.severity as typeof SEVERITIES[number] | null
  return {
    resourceType: 'AllergyIntolerance',
    id: resourceId('allergy', allergy.id),
    meta: { lastUpdated: allergy.updatedAt },
    clinicalStatus: clinicalStatus(allergy.status),
    ...(category === null ? {} : { category: [category] }),
    ...(severity === null ? {} : { criticality: severity === 'severe' ? 'high' : 'low' }),
    code: { text: allergy.substance },
    patient: subject,
    recordedDate: allergy.date,
    ...(allergy.reaction === null ? {} : { reaction: [{ manifestation: [{ text: allergy.reaction }], ...(severity === null ? {} : { severity }) }] }),
    ...(allergy.notes === null ? {} : { note: [{ text: allergy.notes }] })
  }
}

export const allergyMapping: FhirMapping<Allergy> = {
  resources: (allergies, bundle) => allergies.map(allergy => allergyIntolerance(allergy, bundle.links.subject))
}

/** A line of the summary's narrative: the date, the substance, the reaction and its severity, and a resolved allergy said so. */
function describe (resource: Resource): string | undefined {
  if (resource.resourceType !== 'AllergyIntolerance') return undefined
  const reaction = resource.reaction?.[0]
  const what = reaction === undefined ? '' : `: ${reaction.manifestation[0]?.text ?? ''}${reaction.severity === undefined ? '' : ` (${reaction.severity})`}`
  const resolved = resource.clinicalStatus.coding?.[0]?.code === 'resolved' ? ', resolved' : ''
  return `${resource.recordedDate ?? ''} ${resource.code.text ?? ''}${what}${resolved}`.trim()
}

/**
 * The summary's allergies section, shown with its medications. Without
 * allergies it states "no known allergies" as the IPS writes it: an
 * AllergyIntolerance of the IPS's absent-or-unknown code.
 */
const ALLERGIES: SummaryPart = {
  title: 'Allergies and intolerances',
  code: loinc('48765-2', 'Allergies and adverse reactions Document'),
  shownFor: 'medications',
  holds: ofTypes('AllergyIntolerance'),
  describe,
  none: (subject, id, timestamp) => ({
    resourceType: 'AllergyIntolerance',
    id,
    meta: { lastUpdated: timestamp },
    clinicalStatus: clinicalStatus('active'),
    code: { coding: [{ system: ABSENT_UNKNOWN, code: 'no-known-allergies', display: 'No known allergies' }], text: 'No known allergies' },
    patient: subject
  })
}

export const allergyKind: RecordKind<'allergy', 'allergies', 'allergies'> = {
  ...kindNames('allergy', 'allergies', 'allergies', 12),
  fhir: allergyMapping,
  summary: { shared: { medications: true }, parts: [ALLERGIES] },
  descriptions: {
    list: 'Newest first (by date) by default. from and to are inclusive bounds on date; status keeps the active or the resolved ones.',
    change: '`allergy` is an allergy or intolerance (its record an Allergy)'
  },
  filters: { status: { values: STATUSES, column: 'status' } },
  ...storedFields(Allergy, AllergyFields),
  dates: ['date'],
  sorts: { date: 'date', substance: 'substance', createdAt: 'created_at' },
  defaultSort: '-date'
}
