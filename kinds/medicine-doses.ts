import { Type, type Static } from '@sinclair/typebox'
import { fullUrl, ifPresent, IPS_PARTS, resourceId, type FhirMapping, type Links, type MedicationAdministration } from '../lib/fhir'
import { Id, Nullable, Timestamp } from '../lib/schemas'
import { storedFields } from './columns'
import { recordSchema } from './record-schema'
import { kindNames, summaryIn, type RecordKind } from './kind'
import { DoseAmount, doseQuantity, medicineCourseKind, type KeptCourse } from './medicine-courses'

/** An RFC 3339 timestamp with its offset: a date alone, or a time without a zone, is refused. */
const GivenAt = Type.String({
  format: 'date-time',
  description: 'when the dose was given, RFC 3339 with its offset (2024-05-17T08:30:00+02:00 or 2024-05-17T06:30:00Z); answered in UTC. Not before the child\'s date of birth (as it began anywhere: 00:00 at UTC+14) and not more than a day after now. It need not lie within the course\'s dates',
  examples: ['2024-05-17T08:30:00+02:00']
})

const EARLY = 'A dose is early when it was given before the next dose was allowed by the course\'s doses given before it (by givenAt; of two given at the same moment, the one recorded first comes first). An early dose is recorded all the same, never refused.'
const KEPT = 'When a dose is added, moved or deleted, the early flag of every later dose its change can reach is worked out again in the same write: those given within the course\'s window after it (the longer of minIntervalHours and, with maxDosesPer24h, 24 hours), since a flag depends only on the doses given within that window before its dose; when the course\'s minIntervalHours or maxDosesPer24h change, every flag of the course. A dose whose flag changes is changed too (its version, ETag and an `updated` change in the feed), as the course is when its nextDoseAllowedAt moves.'

export const MedicineDoseFields = {
  givenAt: GivenAt,
  amount: Type.Optional(Nullable({ ...DoseAmount, description: 'the amount given, in the course\'s doseUnit: more than 0, at most 100000, at most 3 decimals; null: the course\'s doseAmount' }))
}

export const MedicineDose = recordSchema('MedicineDose', {
  courseId: Id,
  givenAt: Timestamp,
  amount: Nullable(Type.Number({ description: 'null: the course\'s doseAmount was given' })),
  early: Type.Boolean({ description: `${EARLY} ${KEPT}` })
}, `A dose of a medicine course. It belongs to its course for good (its courseId and childId never change) and goes when the course is deleted. ${EARLY}`)
export type MedicineDose = Static<typeof MedicineDose>

/**
 * A dose as a MedicationAdministration of its course's medicine at the
 * moment it was given, its amount (the course's dose when it has none of its
 * own), supported by its course's MedicationStatement; an early dose says so
 * in a note.
 */
export function doseAdministration (dose: MedicineDose, course: KeptCourse | undefined, links: Links): MedicationAdministration {
  const amount = dose.amount ?? course?.doseAmount
  return {
    resourceType: 'MedicationAdministration',
    id: resourceId('medicine-dose', dose.id),
    meta: { lastUpdated: dose.updatedAt },
    status: 'completed',
    medicationCodeableConcept: { text: course?.name ?? 'Medicine' },
    subject: links.subject,
    ...ifPresent('supportingInformation', course === undefined ? null : [{ reference: fullUrl(resourceId('medicine-course', dose.courseId)), type: 'MedicationStatement' }]),
    effectiveDateTime: dose.givenAt,
    ...ifPresent('note', dose.early ? [{ text: 'Given early: before the course\'s minimum interval or daily limit allowed it' }] : null),
    ...ifPresent('dosage', course === undefined || amount === undefined ? null : { dose: doseQuantity(amount, course.doseUnit) })
  }
}

/** After the courses they belong to. */
export const medicineDoseMapping: FhirMapping<MedicineDose> = {
  resources: (doses, bundle) => doses.map(dose => doseAdministration(dose, bundle.kept<KeptCourse>('medicine-course', dose.courseId), bundle.links))
}

const SCOPE = 'Within the family scope of the course\'s child: any member reads, an owner or member writes; a course of another family is a 403, one that does not exist a 404.'

/** The staged course of the staged dose `r`. */
const STAGED_COURSE = 'import_rows c where c.kind = \'medicineCourses\' and c.child = r.child and c.old_id = (r.row->>\'course_id\')::integer'
/** The moments the staged doses of the same course were given before the dose `r`, newest first, as many as the rule reads. */
const DOSES_BEFORE = `array(
  select (d.row->>'given_at')::timestamptz from import_rows d
  where d.kind = 'medicineDoses' and d.child = r.child and d.row->>'course_id' = r.row->>'course_id'
    and ((d.row->>'given_at')::timestamptz, d.old_id) < ((r.row->>'given_at')::timestamptz, r.old_id)
  order by (d.row->>'given_at')::timestamptz desc, d.old_id desc
  limit greatest(coalesce((c.row->>'max_doses_per24h')::integer, 1), 1)
)`

export const medicineDoseKind: RecordKind<'medicineDose', 'medicineDoses', 'medicine_doses'> = {
  ...kindNames('medicineDose', 'medicineDoses', 'medicine_doses', 11),
  noun: 'medicine dose',
  fhir: medicineDoseMapping,
  summary: summaryIn('medications', IPS_PARTS.medications, 'MedicationAdministration'),
  // A dose is listed and created under its course, as /api/medicine-courses/{courseId}/doses.
  parent: { kind: medicineCourseKind, param: 'courseId', column: 'course_id', segment: 'doses' },
  descriptions: {
    list: `Oldest first by default. from and to are UTC dates of givenAt, inclusive. The ETag changes with any change of the child's records. ${SCOPE}`,
    create: `The dose belongs to the course and its child for good. ${EARLY} The course's nextDoseAllowedAt moves with it (its version too). ${KEPT} ${SCOPE}`,
    exported: 'every dose of the child\'s medicine courses, oldest first (by givenAt); each names its course by courseId',
    change: '`medicineDose` is a dose of a medicine course (its record a MedicineDose, childId the course\'s child). A dose that moves its course\'s nextDoseAllowedAt comes with a `medicineCourse` change `updated`, and with a `medicineDose` change `updated` of each later dose whose early flag it changes'
  },
  ...storedFields(MedicineDose, MedicineDoseFields),
  dates: [],
  timestamps: ['givenAt'],
  sorts: { givenAt: 'given_at', createdAt: 'created_at' },
  defaultSort: 'givenAt',
  // Written with its flag worked out from the archive's doses, so that nothing is written twice.
  archiveDerived: {
    early: `coalesce((r.row->>'given_at')::timestamptz < (
      select medicine_allowed_after(${DOSES_BEFORE}, (c.row->>'min_interval_hours')::numeric, (c.row->>'max_doses_per24h')::integer)
      from ${STAGED_COURSE}
    ), false)`
  }
}
