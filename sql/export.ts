import type { PendingQuery, Row } from 'postgres'
import type { GrowthMeasurement } from '../lib/growth/point'
import type { Db } from '../db/client'
import type { RecordTableSpec } from '../kinds/kind'
import { camelRow } from './records'
import { attachmentColumns, type Attachment } from './attachments'

type Fragment = PendingQuery<Row[]>

/** Rows are read this many at a time, so an export never holds a whole table. */
export const BATCH_SIZE = 500

/** How every export reads: one snapshot of the database, never a write. */
export const SNAPSHOT = 'isolation level repeatable read read only'

export interface Snapshot {
  /** The moment of the snapshot: the transaction's start. */
  exportedAt: Date
  /** The name of the last applied migration. */
  schemaVersion: string
}

export interface FamilyChild {
  id: number
  avatarName: string | null
}

export interface FamilyMemberName {
  name: string
  role: string
}

export async function exportSnapshot (db: Db): Promise<Snapshot> {
  const [row] = await db<Snapshot[]>`
    select now() as "exportedAt",
           (select name from migrations order by name desc limit 1) as "schemaVersion"
  `
  return row
}

async function * mapped<T> (batches: AsyncIterable<Row[]>, map: (row: Row) => T): AsyncIterable<T[]> {
  for await (const rows of batches) yield rows.map(map)
}

/** A child's records of one kind, in the given order, as the API names their fields. */
export function recordBatches (db: Db, spec: RecordTableSpec, childId: number, order: Fragment): AsyncIterable<Record<string, unknown>[]> {
  const rows = db`
    select ${db(Object.values(spec.columns))}
    from ${db(spec.table)}
    where child_id = ${childId}
    ${order}
  `.cursor(BATCH_SIZE)
  return mapped(rows, row => camelRow(spec, row))
}

/** A child's attachments, newest first as their list answers by default. */
export function attachmentBatches (db: Db, childId: number): AsyncIterable<Attachment[]> {
  return db<Attachment[]>`
    select ${attachmentColumns(db)}
    from attachments
    where child_id = ${childId}
    order by created_at desc, id desc
  `.cursor(BATCH_SIZE)
}

/** A child's measurements, oldest first, as the growth document scores them. */
export function growthBatches (db: Db, childId: number): AsyncIterable<GrowthMeasurement[]> {
  return db<GrowthMeasurement[]>`
    select id, measured_at as "measuredAt", height_cm as "heightCm", weight_kg as "weightKg",
           head_circumference_cm as "headCircumferenceCm"
    from measurements
    where child_id = ${childId}
    order by measured_at, id
  `.cursor(BATCH_SIZE)
}

/** The stored names of the attachments of a family's children. */
export function familyStoredNames (db: Db, familyId: number): AsyncIterable<Array<{ storedName: string }>> {
  return db<Array<{ storedName: string }>>`
    select a.stored_name as "storedName"
    from attachments a
    join children c on c.id = a.child_id
    where c.family_id = ${familyId}
    order by a.id
  `.cursor(BATCH_SIZE)
}

export async function familyChildren (db: Db, familyId: number): Promise<FamilyChild[]> {
  return db<FamilyChild[]>`
    select id, avatar_name as "avatarName" from children where family_id = ${familyId} order by id
  `
}

export async function familyMemberNames (db: Db, familyId: number): Promise<FamilyMemberName[]> {
  return db<FamilyMemberName[]>`
    select u.name, m.role
    from family_members m
    join users u on u.id = m.user_id
    where m.family_id = ${familyId}
    order by u.id
  `
}

/** The measurements and illnesses that a child's attachments point to. */
export async function attachmentTargets (db: Db, childId: number): Promise<{ measurements: Set<number>, illnesses: Set<number> }> {
  const rows = await db<Array<{ measurementId: number | null, illnessId: number | null }>>`
    select distinct measurement_id as "measurementId", illness_id as "illnessId"
    from attachments
    where child_id = ${childId} and (measurement_id is not null or illness_id is not null)
  `
  return {
    measurements: new Set(rows.flatMap(row => row.measurementId ?? [])),
    illnesses: new Set(rows.flatMap(row => row.illnessId ?? []))
  }
}
