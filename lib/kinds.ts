/**
 * The kinds of a family's data: the tables they live in, their columns by the
 * API's names, and how a stored row reads in the API. The routes, the SQL
 * layer, the exports and the change log all take them from here.
 */

/** The kinds that change, as the changes feed names them. */
export const CHANGE_KINDS = ['family', 'member', 'child', 'measurement', 'visit', 'medicalEvent', 'illness', 'attachment', 'temperature'] as const
export type ChangeKind = typeof CHANGE_KINDS[number]

/** The kinds of a child's records that have the same routes (list, create, read, replace, delete). */
export type RecordKind = 'measurement' | 'visit' | 'medicalEvent' | 'illness' | 'temperature'

/** Tables of records that belong to a child (a temperature reading through its illness too). */
export type RecordTable = 'measurements' | 'visits' | 'medical_events' | 'illnesses' | 'attachments' | 'temperatures'

export const measurementColumns = {
  id: 'id',
  childId: 'child_id',
  measuredAt: 'measured_at',
  heightCm: 'height_cm',
  weightKg: 'weight_kg',
  headCircumferenceCm: 'head_circumference_cm',
  visitId: 'visit_id',
  notes: 'notes',
  version: 'version',
  createdAt: 'created_at',
  updatedAt: 'updated_at'
}

export const visitColumns = {
  id: 'id',
  childId: 'child_id',
  date: 'date',
  type: 'type',
  provider: 'provider',
  notes: 'notes',
  version: 'version',
  createdAt: 'created_at',
  updatedAt: 'updated_at'
}

export const medicalEventColumns = {
  id: 'id',
  childId: 'child_id',
  date: 'date',
  type: 'type',
  name: 'name',
  description: 'description',
  visitId: 'visit_id',
  doseNumber: 'dose_number',
  lotNumber: 'lot_number',
  site: 'site',
  nextDueDate: 'next_due_date',
  version: 'version',
  createdAt: 'created_at',
  updatedAt: 'updated_at'
}

export const illnessColumns = {
  id: 'id',
  childId: 'child_id',
  startDate: 'start_date',
  endDate: 'end_date',
  diagnosis: 'diagnosis',
  symptoms: 'symptoms',
  medications: 'medications',
  temperatureC: 'temperature_c',
  maxTemperatureC: 'max_temperature_c',
  visitId: 'visit_id',
  notes: 'notes',
  version: 'version',
  createdAt: 'created_at',
  updatedAt: 'updated_at'
}

export const temperatureColumns = {
  id: 'id',
  childId: 'child_id',
  illnessId: 'illness_id',
  takenAt: 'taken_at',
  temperatureC: 'temperature_c',
  method: 'method',
  notes: 'notes',
  version: 'version',
  createdAt: 'created_at',
  updatedAt: 'updated_at'
}

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

/** The table of each kind of record, and the route segment it is reached by. */
export const RECORD_TABLES: Record<RecordKind | 'attachment', { table: RecordTable, path: string }> = {
  measurement: { table: 'measurements', path: 'measurements' },
  visit: { table: 'visits', path: 'visits' },
  medicalEvent: { table: 'medical_events', path: 'medical-events' },
  illness: { table: 'illnesses', path: 'illnesses' },
  temperature: { table: 'temperatures', path: 'temperatures' },
  attachment: { table: 'attachments', path: 'attachments' }
}

type Row = Record<string, unknown>

function camel (columns: Record<string, string>, row: Row): Row {
  const out: Row = {}
  for (const [name, column] of Object.entries(columns)) out[name] = row[column] ?? null
  return out
}

/** Timestamps in the change log are text; the API answers them as dates in UTC. */
function timestamps (row: Row, names: string[]): Row {
  for (const name of names) {
    if (typeof row[name] === 'string') row[name] = new Date(row[name] as string)
  }
  return row
}

const RECORD_COLUMNS: Record<RecordKind, Record<string, string>> = {
  measurement: measurementColumns,
  visit: visitColumns,
  medicalEvent: medicalEventColumns,
  illness: illnessColumns,
  temperature: temperatureColumns
}

/**
 * A row as the change log keeps it (the table's columns) in the shape the
 * kind's GET answers. A family answers its own fields; the reader's role is
 * added by the caller.
 */
export function present (kind: ChangeKind, row: Row): Row {
  switch (kind) {
    case 'family':
      return timestamps({
        id: row.id,
        name: row.name,
        memberCount: row.member_count ?? null,
        childCount: row.child_count ?? null,
        version: row.version,
        createdAt: row.created_at
      }, ['createdAt'])
    case 'member':
      return timestamps({ userId: row.user_id, name: row.name, email: row.email, role: row.role, joinedAt: row.joined_at }, ['joinedAt'])
    case 'child':
      return timestamps({
        id: row.id,
        familyId: row.family_id,
        name: row.name,
        dateOfBirth: row.date_of_birth,
        sex: row.sex,
        avatarUrl: row.avatar_name === null || row.avatar_name === undefined ? null : `/avatars/${row.avatar_name as string}`,
        gestationalAgeAtBirthWeeks: row.gestational_age_weeks ?? null,
        gestationalAgeAtBirthDays: row.gestational_age_days ?? null,
        version: row.version,
        createdAt: row.created_at,
        updatedAt: row.updated_at
      }, ['createdAt', 'updatedAt'])
    case 'attachment':
      return timestamps({
        id: row.id,
        childId: row.child_id,
        visitId: row.visit_id ?? null,
        measurementId: row.measurement_id ?? null,
        illnessId: row.illness_id ?? null,
        fileName: row.file_name,
        contentType: row.content_type,
        sizeBytes: row.size_bytes,
        url: `/uploads/${row.stored_name as string}`,
        version: row.version,
        createdAt: row.created_at
      }, ['createdAt'])
    case 'illness':
      return withIllnessStatus(timestamps(camel(illnessColumns, row), ['createdAt', 'updatedAt']))
    case 'temperature':
      return timestamps(camel(temperatureColumns, row), ['takenAt', 'createdAt', 'updatedAt'])
    default:
      return timestamps(camel(RECORD_COLUMNS[kind], row), ['createdAt', 'updatedAt'])
  }
}
