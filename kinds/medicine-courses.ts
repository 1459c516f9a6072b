import { Type, type Static } from '@sinclair/typebox'
import { ifPresent, IPS_PARTS, resourceId, UCUM, type FhirMapping, type Links, type MedicationStatement, type Quantity } from '../lib/fhir'
import { DATE_PATTERN, IsoDate, Name, Nullable } from '../lib/schemas'
import { storedFields } from './columns'
import { recordSchema } from './record-schema'
import { kindNames, summaryIn, type RecordKind } from './kind'

/** The units a course's dose is measured in. */
export const DOSE_UNITS = ['mg', 'mcg', 'g', 'ml', 'drop', 'tablet', 'capsule', 'puff', 'sachet', 'suppository', 'IU'] as const
export type DoseUnit = typeof DOSE_UNITS[number]

/** An amount of a medicine in its course's unit: more than 0, at most 100,000, at most 3 decimals. */
export const DoseAmount = Type.Number({ exclusiveMinimum: 0, maximum: 100000, 'x-max-decimals': 3 })

export const DoseUnit = Type.String({
  enum: [...DOSE_UNITS],
  description: 'the unit of doseAmount: a mass (mg, mcg, g), a volume (ml), drops, international units (IU), or a count of tablets, capsules, puffs, sachets or suppositories'
})

const RULE = 'The next dose is allowed at the later of the last dose + minIntervalHours and, when maxDosesPer24h doses were given in the 24 hours before, the oldest of them + 24 h.'

export const MedicineCourseFields = {
  name: { ...Name(200), description: 'the medicine, 1 to 200 characters (e.g. Paracetamol 120 mg/5 ml)' },
  doseAmount: { ...DoseAmount, description: 'one dose, in doseUnit: more than 0, at most 100000, at most 3 decimals' },
  doseUnit: DoseUnit,
  minIntervalHours: Type.Number({ exclusiveMinimum: 0, maximum: 168, 'x-max-decimals': 2, description: 'the least time between two doses, in hours: more than 0, at most 168 (a week), at most 2 decimals (0.5 is 30 minutes)' }),
  maxDosesPer24h: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 24, description: 'the most doses in any 24 hours, 1 to 24; null: no daily limit beyond the interval' }))),
  startDate: IsoDate,
  endDate: Type.Optional(Nullable(Type.String({ format: 'date', pattern: DATE_PATTERN, examples: ['2024-05-24'], description: 'the last day of the course, inclusive: not before startDate, and may lie in the future; null while it has no planned end' }))),
  remind: Type.Optional(Nullable(Type.Boolean({ description: 'remind the family\'s members when a dose is allowed again while the course runs; omitted or null is false (on a PUT too), a PATCH without it keeps it' })))
}

export const MedicineCourse = recordSchema('MedicineCourse', {
  name: Type.String(),
  doseAmount: Type.Number(),
  doseUnit: DoseUnit,
  minIntervalHours: Type.Number(),
  maxDosesPer24h: Nullable(Type.Integer()),
  startDate: IsoDate,
  endDate: Nullable(IsoDate),
  remind: Type.Boolean(),
  nextDoseAllowedAt: Nullable(Type.String({
    format: 'date-time',
    description: `when the next dose is allowed, from the course's doses (GET /api/medicine-courses/{courseId}/doses); null without doses. ${RULE} A dose or a change of the course's interval or limit that moves it changes the course too: its version and ETag move and the changes feed has a medicineCourse \`updated\``
  }))
}, `A course of a medicine given to a child: its dose, the least time between doses and the most doses in 24 hours, from startDate to endDate. Its doses are recorded under it. ${RULE}`)
export type MedicineCourse = Static<typeof MedicineCourse>

/** Each unit's UCUM code: a mass or a volume, drops and international units, the others counted (`{tablet}`). */
const UCUM_CODES: Record<DoseUnit, string> = {
  mg: 'mg', mcg: 'ug', g: 'g', ml: 'mL', drop: '[drp]', IU: '[iU]',
  tablet: '{tablet}', capsule: '{capsule}', puff: '{puff}', sachet: '{sachet}', suppository: '{suppository}'
}

export function doseQuantity (value: number, unit: DoseUnit): Quantity {
  return { value, unit, system: UCUM, code: UCUM_CODES[unit] }
}

/** What a dose's administration says of its course. */
export interface KeptCourse { name: string, doseAmount: number, doseUnit: DoseUnit }

function hours (value: number): string {
  return `${value} h`
}

/**
 * A course as a MedicationStatement: the medicine by its name, the course's
 * dates as its period, the dose with its unit (UCUM), its minimum interval
 * in words, and its daily limit as the most medicine in 24 hours. Its status
 * is `active` while the course has no end date, `completed` once it has one,
 * whatever the day of the export (the period says when it ends).
 */
export function courseStatement (course: MedicineCourse, links: Links): MedicationStatement {
  const unit = course.doseUnit as DoseUnit
  const dose = doseQuantity(course.doseAmount, unit)
  const limit = course.maxDosesPer24h
  const text = [`${course.doseAmount} ${course.doseUnit}`, `at least ${hours(course.minIntervalHours)} apart`, ...(limit === null ? [] : [`at most ${limit} in 24 h`])].join(', ')
  return {
    resourceType: 'MedicationStatement',
    id: resourceId('medicine-course', course.id),
    meta: { lastUpdated: course.updatedAt },
    status: course.endDate === null ? 'active' : 'completed',
    medicationCodeableConcept: { text: course.name },
    subject: links.subject,
    effectivePeriod: { start: course.startDate, ...ifPresent('end', course.endDate) },
    dosage: [{
      text,
      doseAndRate: [{ doseQuantity: dose }],
      ...ifPresent('maxDosePerPeriod', limit === null
        ? null
        : { numerator: doseQuantity(Number((limit * course.doseAmount).toFixed(3)), unit), denominator: { value: 24, unit: 'h', system: UCUM, code: 'h' } })
    }]
  }
}

/** After the medical events: each course a MedicationStatement, kept for its doses. */
export const medicineCourseMapping: FhirMapping<MedicineCourse> = {
  resources: (courses, bundle) => courses.map(course => {
    bundle.keep('medicine-course', course.id, { name: course.name, doseAmount: course.doseAmount, doseUnit: course.doseUnit })
    return courseStatement(course, bundle.links)
  })
}

/** The moments the staged doses of the staged course `r` were given, newest first, as many as its rule reads. */
const STAGED_DOSES = `array(
  select (d.row->>'given_at')::timestamptz from import_rows d
  where d.kind = 'medicineDoses' and d.child = r.child and (d.row->>'course_id')::integer = r.old_id
  order by (d.row->>'given_at')::timestamptz desc, d.old_id desc
  limit greatest(coalesce((r.row->>'max_doses_per24h')::integer, 1), 1)
)`

export const medicineCourseKind: RecordKind<'medicineCourse', 'medicineCourses', 'medicine_courses'> = {
  ...kindNames('medicineCourse', 'medicineCourses', 'medicine_courses', 10),
  fhir: medicineCourseMapping,
  summary: summaryIn('medications', IPS_PARTS.medications, 'MedicationStatement'),
  descriptions: {
    list: 'Newest first (by startDate) by default. from and to are inclusive bounds on startDate.',
    create: `${RULE} The course answers nextDoseAllowedAt, null until its first dose (POST /api/medicine-courses/{courseId}/doses).`,
    exported: 'every medicine course of the child, newest first (by startDate), each with its nextDoseAllowedAt',
    change: '`medicineCourse` is a medicine course (its record a MedicineCourse); it changes with its doses when they move its nextDoseAllowedAt'
  },
  ...storedFields(MedicineCourse, MedicineCourseFields),
  // The end may lie in the future: only the start is held to the child's life.
  dates: ['startDate'],
  sorts: { startDate: 'start_date', endDate: 'end_date', name: 'name', createdAt: 'created_at' },
  defaultSort: '-startDate',
  check: body => typeof body.endDate === 'string' && body.endDate < (body.startDate as string)
    ? [{ path: '/body/endDate', message: 'must not be before startDate' }]
    : [],
  // Written with the next dose its staged doses allow, so that they, written next, leave it as it is: one change a row.
  archiveDerived: {
    next_dose_allowed_at: `medicine_allowed_after(${STAGED_DOSES}, (r.row->>'min_interval_hours')::numeric, (r.row->>'max_doses_per24h')::integer)`
  }
}
