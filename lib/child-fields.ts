/**
 * The fields of a child that a parent writes, as the API names them, in the
 * order the API answers them: the column each is stored in, and the value it
 * takes when left out (a field without one must be given). A child's writes,
 * the archive import and a partial update are derived from this list.
 */
export const CHILD_FIELDS = {
  name: { column: 'name' },
  dateOfBirth: { column: 'date_of_birth' },
  sex: { column: 'sex' },
  gestationalAgeAtBirthWeeks: { column: 'gestational_age_weeks', absent: null },
  gestationalAgeAtBirthDays: { column: 'gestational_age_days', absent: null },
  // Children made, or archives written, before the growth chart was chosen are scored on WHO's.
  growthReference: { column: 'growth_reference', absent: 'who' },
  // Archives written before schedules have none.
  scheduleId: { column: 'schedule_id', absent: null }
} as const

export type ChildField = keyof typeof CHILD_FIELDS

export const CHILD_FIELD_NAMES = Object.keys(CHILD_FIELDS) as ChildField[]

/** A child's fields as the columns they are stored in, each one left out as its default. */
export function childColumns (fields: Partial<Record<ChildField, unknown>>): Record<string, string | number | null> {
  const columns: Record<string, string | number | null> = {}
  for (const name of CHILD_FIELD_NAMES) {
    const field = CHILD_FIELDS[name]
    const value = fields[name] ?? ('absent' in field ? field.absent : undefined)
    columns[field.column] = value as string | number | null
  }
  return columns
}

/** The writable fields of a child as read, without its other fields. */
export function childFieldsOf<T extends Record<ChildField, unknown>> (child: T): Pick<T, ChildField> {
  return Object.fromEntries(CHILD_FIELD_NAMES.map(name => [name, child[name]])) as Pick<T, ChildField>
}
