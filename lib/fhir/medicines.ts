import type { FhirMapping } from './bundle'
import { ifPresent } from './fields'
import { fullUrl, resourceId } from './ids'
import type { Links } from './links'
import type { MedicationAdministration, MedicationStatement, Quantity } from './resources'
import { UCUM } from './vital-signs'

/** The units a course's dose is measured in. */
export const DOSE_UNITS = ['mg', 'mcg', 'g', 'ml', 'drop', 'tablet', 'capsule', 'puff', 'sachet', 'suppository', 'IU'] as const
export type DoseUnit = typeof DOSE_UNITS[number]

/** Each unit's UCUM code: a mass or a volume, drops and international units, the others counted (`{tablet}`). */
const UCUM_CODES: Record<DoseUnit, string> = {
  mg: 'mg', mcg: 'ug', g: 'g', ml: 'mL', drop: '[drp]', IU: '[iU]',
  tablet: '{tablet}', capsule: '{capsule}', puff: '{puff}', sachet: '{sachet}', suppository: '{suppository}'
}

/** A medicine course as the API answers it. */
export interface MedicineCourse {
  id: number
  childId: number
  name: string
  doseAmount: number
  doseUnit: DoseUnit
  minIntervalHours: number
  maxDosesPer24h: number | null
  startDate: string
  endDate: string | null
  remind: boolean
  nextDoseAllowedAt: string | null
  createdAt: string
  updatedAt: string
}

/** A dose of a medicine course as the API answers it. */
export interface MedicineDose {
  id: number
  childId: number
  courseId: number
  givenAt: string
  amount: number | null
  early: boolean
  createdAt: string
  updatedAt: string
}

function doseQuantity (value: number, unit: DoseUnit): Quantity {
  return { value, unit, system: UCUM, code: UCUM_CODES[unit] }
}

/** What a dose's administration says of its course. */
interface KeptCourse { name: string, doseAmount: number, doseUnit: DoseUnit }

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
  const dose = doseQuantity(course.doseAmount, course.doseUnit)
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
        : { numerator: doseQuantity(Number((limit * course.doseAmount).toFixed(3)), course.doseUnit), denominator: { value: 24, unit: 'h', system: UCUM, code: 'h' } })
    }]
  }
}

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

/** After the medical events: each course a MedicationStatement, kept for its doses. */
export const medicineCourseMapping: FhirMapping<MedicineCourse> = {
  resources: (courses, bundle) => courses.map(course => {
    bundle.keep('medicine-course', course.id, { name: course.name, doseAmount: course.doseAmount, doseUnit: course.doseUnit })
    return courseStatement(course, bundle.links)
  })
}

/** After the courses they belong to. */
export const medicineDoseMapping: FhirMapping<MedicineDose> = {
  resources: (doses, bundle) => doses.map(dose => doseAdministration(dose, bundle.kept<KeptCourse>('medicine-course', dose.courseId), bundle.links))
}
