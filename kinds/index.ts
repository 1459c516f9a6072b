import { allergyKind } from './allergies'
import { illnessKind } from './illnesses'
import { measurementKind } from './measurements'
import { medicalEventKind } from './medical-events'
import { medicineCourseKind } from './medicine-courses'
import { medicineDoseKind } from './medicine-doses'
import { temperatureKind } from './temperatures'
import { visitKind } from './visits'

import type { SummaryPart } from '../lib/fhir'

export type { RecordKind } from './kind'

/** The kinds of a child's records, in the order of the export. */
export const KINDS = [
  measurementKind,
  visitKind,
  medicalEventKind,
  illnessKind,
  // After the illnesses they belong to.
  temperatureKind,
  medicineCourseKind,
  // After the courses they belong to.
  medicineDoseKind,
  allergyKind
] as const

/**
 * The kinds in the order of a child's FHIR bundle: those other records link
 * to first (the visits, whose Encounters the others point to), then the
 * others in the registry's order, where a kind comes after its parent.
 */
export const BUNDLE_KINDS: readonly RegisteredKind[] = [
  ...KINDS.filter(kind => kind.linkedAs !== undefined),
  ...KINDS.filter(kind => kind.linkedAs === undefined)
]

/** The sections of a shared summary the kinds fill, as each names them. */
export const SUMMARY_PARTS: readonly SummaryPart[] = KINDS.flatMap(kind => kind.summary.parts)

/** A kind of record as the change log names it: `measurement`. */
export type RecordKindName = typeof KINDS[number]['kind']
/** A kind's list in an export or an archive: `measurements`. */
export type RecordKey = typeof KINDS[number]['key']
/** A kind's table: `measurements`. */
export type RecordKindTable = typeof KINDS[number]['table']
/** One of the registered kinds, its names and table as literal types. */
export type RegisteredKind = typeof KINDS[number]

/** The kinds under their names in the export, in its order. */
export const recordKinds: Array<{ key: RecordKey, spec: RegisteredKind }> = KINDS.map(spec => ({ key: spec.key, spec }))

const byName = new Map<string, RegisteredKind>(KINDS.map(spec => [spec.kind, spec]))

/** The kind of record the change log names so; undefined for a family, a member, a child or an attachment. */
export function recordKind (name: string): RegisteredKind | undefined {
  return byName.get(name)
}
