import type { TObject, TSchema } from '@sinclair/typebox'
import type { JSONValue, PendingQuery, Row } from 'postgres'
import type { Db } from '../db/client'
import type { RecordTableSpec } from '../kinds/kind'
import type { RecordTable } from '../kinds/changes'

type Fragment = PendingQuery<Row[]>

/**
 * The queries shared by the kinds of a child's records (measurements, visits,
 * medical events, illnesses, temperature readings), each described by its
 * module in kinds/.
 */

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

export async function findRecord (db: Db, spec: RecordTableSpec, id: number): Promise<Record<string, unknown> | undefined> {
  const [row] = await db`select ${db(snakeList(spec))} from ${db(spec.table)} where id = ${id}`
  return row === undefined ? undefined : camelRow(spec, row)
}

/** Inserts a record of a child; `links` are columns set once at creation (the parent of a record listed under another). */
export async function insertRecord (
  db: Db, spec: RecordTableSpec, childId: number, values: Record<string, unknown>, links: Record<string, number> = {}
): Promise<Record<string, unknown>> {
  const row = { child_id: childId, ...links, ...toColumns(spec, values) }
  const [inserted] = await db`
    insert into ${db(spec.table)} ${db(row)}
    returning ${db(snakeList(spec))}
  `
  return camelRow(spec, inserted)
}

/** A record, its row locked for the rest of the transaction; undefined when it is gone. */
export async function lockRecord (db: Db, spec: RecordTableSpec, id: number): Promise<Record<string, unknown> | undefined> {
  const [row] = await db`select ${db(snakeList(spec))} from ${db(spec.table)} where id = ${id} for update`
  return row === undefined ? undefined : camelRow(spec, row)
}

/**
 * Replaces every writable column; an omitted optional field becomes null.
 * With `expectedVersion`, only while the record still has it: undefined otherwise.
 */
export async function replaceRecord (
  db: Db, spec: RecordTableSpec, id: number, values: Record<string, unknown>, expectedVersion: number | null = null
): Promise<Record<string, unknown> | undefined> {
  const row = toColumns(spec, values)
  const [updated] = await db`
    update ${db(spec.table)} set ${db(row)}, updated_at = now()
    where id = ${id} ${expectedVersion === null ? db`` : db`and version = ${expectedVersion}`}
    returning ${db(snakeList(spec))}
  `
  return updated === undefined ? undefined : camelRow(spec, updated)
}

/** Deletes a record; with `expectedVersion`, only while it still has it. True when it was deleted. */
export async function deleteRecord (db: Db, table: RecordTable, id: number, expectedVersion: number | null = null): Promise<boolean> {
  const rows = await db`
    delete from ${db(table)}
    where id = ${id} ${expectedVersion === null ? db`` : db`and version = ${expectedVersion}`}
    returning id
  `
  return rows.length > 0
}

/**
 * Locks the row of a record's parent (`table`, `column`) for the rest of the
 * transaction: by the record's id, or with `parentId` by the parent's own.
 * Nothing is locked when either is gone.
 */
export async function lockParent (
  db: Db, parent: { table: string, column: string }, record: { table: string, id: number } | { parentId: number }
): Promise<void> {
  const id = 'parentId' in record
    ? db`${record.parentId}`
    : db`(select r.${db(parent.column)} from ${db(record.table)} r where r.id = ${record.id})`
  await db`select 1 from ${db(parent.table)} where id = ${id} for no key update`
}

/** A record's version now, or undefined when it is gone. */
export async function recordVersion (db: Db, table: RecordTable, id: number): Promise<number | undefined> {
  const [row] = await db<{ version: number }[]>`select version from ${db(table)} where id = ${id}`
  return row?.version
}

/**
 * The date of a child's visit, or undefined when it is not one of the
 * child's. Its row is share-locked for the rest of the transaction: its date
 * cannot move past a record that is being linked to it.
 */
export async function visitDateOf (db: Db, visitId: number, childId: number): Promise<string | undefined> {
  const [row] = await db<Array<{ date: string }>>`select date from visits where id = ${visitId} and child_id = ${childId} for share`
  return row?.date
}

/**
 * A table whose records link to a visit, and the column of their own date;
 * `ongoing`: a record without it (an illness without its end) lasts until `today`.
 */
export interface VisitLinkTable {
  kind: string
  table: string
  dateColumn: string
  ongoing: boolean
}

/** The first record linked to a visit whose own date is before `date`, if any: by date, then id. */
export async function linkedBefore (
  db: Db, visitId: number, date: string, today: string, tables: VisitLinkTable[]
): Promise<{ kind: string, id: number, date: string } | undefined> {
  const parts = tables.map(({ kind, table, dateColumn, ongoing }) => {
    const own = ongoing ? db`coalesce(${db(dateColumn)}, ${today}::date)` : db`${db(dateColumn)}`
    return db`
      select ${kind}::text as kind, id, ${own} as date from ${db(table)}
      where visit_id = ${visitId} and ${own} < ${date}::date
    `
  })
  if (parts.length === 0) return undefined
  const union = parts.reduce((all, part) => db`${all} union all ${part}`)
  const [row] = await db<Array<{ kind: string, id: number, date: string }>>`
    select kind, id, date::text as date from (${union}) linked order by date, id limit 1
  `
  return row
}

/**
 * The insert of a record from the rows of `from` (see createChecked): the
 * values go as one JSON object, which PostgreSQL reads into the table's own
 * column types.
 */
export function insertFrom (db: Db, spec: RecordTableSpec, childId: number, values: Record<string, unknown>, from: Fragment): Fragment {
  const columns = spec.writable.map(camel => spec.columns[camel])
  // Each list in a fragment of its own: postgres.js reads a helper after `insert` as rows of values.
  const names = db`(child_id, ${db(columns)})`
  const picked = db`${childId}::integer, ${db(columns.map(column => `r.${column}`))}`
  return db`
    insert into ${db(spec.table)} ${names}
    select ${picked}
    from ${from}, json_populate_record(null::${db(spec.table)}, ${db.json(toColumns(spec, values) as JSONValue)}::json) r
    returning *
  `
}

/** Rows go this many to a statement. */
const BATCH = 1000

/**
 * Inserts many records of one child, a batch to a statement, and answers them
 * in the order given, each as the API writes it: JSON written by the
 * database, as a list's page is, joined by commas. Each batch goes as one
 * JSON array, which PostgreSQL reads into the table's own column types.
 */
export async function insertRecords (
  db: Db, spec: AnsweredTableSpec, childId: number, list: Array<Record<string, unknown>>, derived: Record<string, string> = {}
): Promise<string> {
  const columns = spec.writable.map(camel => spec.columns[camel])
  // Each list in a fragment of its own: postgres.js reads a helper after `insert` as rows of values.
  const names = db`(child_id, ${db(columns)})`
  const picked = db`${childId}::integer, ${db(columns.map(column => `r.${column}`))}`
  // The batches go one after another without waiting for each answer: the
  // connection pipelines them, and the database runs them in order.
  const pending: Array<Promise<Array<{ body: string | null }>>> = []
  for (let start = 0; start < list.length; start += BATCH) {
    const batch = list.slice(start, start + BATCH).map(values => toColumns(spec, values))
    // Ids are taken in the order of the rows: they give the order back.
    pending.push(db<Array<{ body: string | null }>>`
      with created as (
        insert into ${db(spec.table)} ${names}
        select ${picked}
        from json_populate_recordset(null::${db(spec.table)}, ${db.json(batch as JSONValue)}::json) with ordinality r
        order by r.ordinality
        returning *
      )
      select string_agg((select row_to_json(x) from (select ${apiColumns(db, spec, derived)}) x)::text, ',' order by r.id) as body
      from created r
    `.execute())
  }
  const parts: string[] = []
  for (const [{ body }] of await Promise.all(pending)) if (body !== null) parts.push(body)
  return parts.join(',')
}

/** A kind's table and the schema of its answer, which says how each column is written. */
export type AnsweredTableSpec = RecordTableSpec & { schema: TObject }

/** A field's types as its schema names them: `number`, `['string', 'null']`. */
function typesOf (schema: TSchema | undefined): unknown[] {
  const type = (schema as { type?: unknown } | undefined)?.type
  return Array.isArray(type) ? type : [type]
}

/**
 * Fields of the answer that are timestamps (`date-time`), written as the API
 * writes them, and decimals (`number`, stored as numeric), written as the
 * shortest number that reads back as the same value, as JavaScript writes them.
 */
function columnKinds (spec: AnsweredTableSpec): { timestamps: Set<string>, decimals: Set<string> } {
  const timestamps = new Set<string>()
  const decimals = new Set<string>()
  for (const field of Object.keys(spec.columns)) {
    const schema = spec.schema.properties[field] as TSchema | undefined
    if ((schema as { format?: unknown } | undefined)?.format === 'date-time') timestamps.add(field)
    else if (typesOf(schema).includes('number')) decimals.add(field)
  }
  return { timestamps, decimals }
}

/** Several fragments joined by commas. */
function commas (db: Db, fragments: Fragment[]): Fragment {
  return fragments.reduce((all, fragment, index) => index === 0 ? fragment : db`${all}, ${fragment}`, db``)
}

/**
 * The columns of a row of `r` as the API names them, for row_to_json: the
 * database then writes the JSON itself, compact, timestamps as the API writes
 * them. Derived fields are constants of the code, never input; a derived
 * field of a column's name answers in its place.
 */
function apiColumns (db: Db, spec: AnsweredTableSpec, derived: Record<string, string>): Fragment {
  const { timestamps, decimals } = columnKinds(spec)
  const columns = Object.entries(spec.columns).map(([name, column]) => Object.hasOwn(derived, name)
    ? db`${db.unsafe(derived[name])} as ${db(name)}`
    : timestamps.has(name)
      ? db`api_timestamp(r.${db(column)}) as ${db(name)}`
      : decimals.has(name)
        ? db`r.${db(column)}::float8 as ${db(name)}`
        : db`r.${db(column)} as ${db(name)}`)
  for (const [name, expression] of Object.entries(derived)) {
    if (!Object.hasOwn(spec.columns, name)) columns.push(db`${db.unsafe(expression)} as ${db(name)}`)
  }
  return commas(db, columns)
}

/**
 * A page of a child's records (or of a record's, by the spec's `parent`
 * column) as the list's whole answer, `{ data, meta }`,
 * written as JSON by the database: one scalar for the statement that also
 * decides the read (sql/access.ts, readChecked). The page reads what it
 * returns, through the index of its order; the total of a child's whole
 * list is read from its kept tally, a filtered list's is counted.
 */
export function listBody (
  db: Db, spec: AnsweredTableSpec, ownerId: number, filters: Fragment[], order: Fragment, limit: number, offset: number,
  derived: Record<string, string> = {}
): Fragment {
  const where = db`r.${db(spec.parent?.column ?? 'child_id')} = ${ownerId} ${conditions(db, filters)}`
  // A child's whole list has its total kept; a filtered one counts it.
  const total = filters.length === 0 && spec.parent === undefined
    ? db`child_rows(${ownerId}, ${spec.table})`
    : db`(select count(*) from ${db(spec.table)} r where ${where})`
  return db`(
    select '{"data":' || coalesce(array_to_json(array_agg(p.item ${order}))::text, '[]') ||
      ',"meta":{"total":' || ${total} ||
      ',"limit":' || ${limit}::integer || ',"offset":' || ${offset}::integer || '}}'
    from (
      select (select row_to_json(x) from (select ${apiColumns(db, spec, derived)}) x) as item, r.*
      from ${db(spec.table)} r
      where ${where}
      ${order}
      limit ${limit} offset ${offset}
    ) p
  )`
}
