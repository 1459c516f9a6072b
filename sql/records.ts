import type { PendingQuery, Row } from 'postgres'
import type { Db } from '../plugins/db'
import type { RecordTable } from './scope'

type Fragment = PendingQuery<Row[]>

/**
 * The queries shared by the kinds of a child's records (measurements, visits,
 * medical events, illnesses). Each kind names its table and its columns, the
 * API's camelCase name mapped to the column's snake_case one.
 */
export interface RecordTableSpec {
  table: RecordTable
  /** Every column the API answers, `id`, `childId` and the timestamps included. */
  columns: Record<string, string>
  /** The columns a client writes. */
  writable: string[]
}

function snakeList (spec: RecordTableSpec): string[] {
  return Object.values(spec.columns)
}

/** A row as the API names its fields. */
export function camelRow (spec: RecordTableSpec, row: Row): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [camel, snake] of Object.entries(spec.columns)) out[camel] = row[snake]
  return out
}

function toColumns (spec: RecordTableSpec, values: Record<string, unknown>): Record<string, unknown> {
  const row: Record<string, unknown> = {}
  for (const camel of spec.writable) row[spec.columns[camel]] = values[camel] ?? null
  return row
}

/** Several `and ...` fragments as one (an empty list is no condition). */
export function conditions (db: Db, fragments: Fragment[]): Fragment {
  return fragments.reduce<Fragment>((all, fragment) => db`${all} ${fragment}`, db``)
}

export async function listRecords (
  db: Db, spec: RecordTableSpec, childId: number, filters: Fragment[], order: Fragment, limit: number, offset: number
): Promise<{ rows: Record<string, unknown>[], total: number }> {
  const rows = await db`
    select ${db(snakeList(spec))}, count(*) over () as total
    from ${db(spec.table)}
    where child_id = ${childId} ${conditions(db, filters)}
    ${order}
    limit ${limit} offset ${offset}
  `
  let total = rows[0]?.total as number | undefined
  if (total === undefined) {
    total = offset === 0
      ? 0
      : (await db`select count(*) as n from ${db(spec.table)} where child_id = ${childId} ${conditions(db, filters)}`)[0].n as number
  }
  return { rows: rows.map(row => camelRow(spec, row)), total }
}

export async function findRecord (db: Db, spec: RecordTableSpec, id: number): Promise<Record<string, unknown> | undefined> {
  const [row] = await db`select ${db(snakeList(spec))} from ${db(spec.table)} where id = ${id}`
  return row === undefined ? undefined : camelRow(spec, row)
}

export async function insertRecord (db: Db, spec: RecordTableSpec, childId: number, values: Record<string, unknown>): Promise<Record<string, unknown>> {
  const row = { child_id: childId, ...toColumns(spec, values) }
  const [inserted] = await db`
    insert into ${db(spec.table)} ${db(row)}
    returning ${db(snakeList(spec))}
  `
  return camelRow(spec, inserted)
}

/** Replaces every writable column; an omitted optional field becomes null. */
export async function replaceRecord (db: Db, spec: RecordTableSpec, id: number, values: Record<string, unknown>): Promise<Record<string, unknown>> {
  const row = toColumns(spec, values)
  const [updated] = await db`
    update ${db(spec.table)} set ${db(row)}, updated_at = now()
    where id = ${id}
    returning ${db(snakeList(spec))}
  `
  return camelRow(spec, updated)
}

export async function deleteRecord (db: Db, spec: RecordTableSpec, id: number): Promise<void> {
  await db`delete from ${db(spec.table)} where id = ${id}`
}

export async function visitOfChild (db: Db, visitId: number, childId: number): Promise<boolean> {
  const [row] = await db`select 1 from visits where id = ${visitId} and child_id = ${childId}`
  return row !== undefined
}
