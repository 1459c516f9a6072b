import type { JSONValue } from 'postgres'
import type { Db } from '../db/client'

/** Tables an archive's rows are written into. */
export type ImportTable = 'children' | 'visits' | 'measurements' | 'medical_events' | 'illnesses' | 'temperatures' | 'attachments'

/** Rows go this many to a statement. */
const BATCH = 1000

/** Ids for `count` new rows of a table, taken from its sequence, so that links can be written with the rows. */
export async function newIds (db: Db, table: ImportTable, count: number): Promise<number[]> {
  if (count === 0) return []
  const rows = await db<{ id: number }[]>`
    select nextval(pg_get_serial_sequence(${table}, 'id'))::integer as id from generate_series(1, ${count})
  `
  return rows.map(row => row.id)
}

/**
 * Inserts rows given by their column names, a batch to a statement: each batch
 * goes as one JSON array, which PostgreSQL reads into the table's own column
 * types. Columns left out take their defaults.
 */
export async function insertRows (db: Db, table: ImportTable, columns: string[], rows: Array<Record<string, unknown>>): Promise<void> {
  // Each list in a fragment of its own: postgres.js reads a helper after `insert` as rows of values.
  const names = db`(${db(columns)})`
  const picked = db`${db(columns.map(column => `r.${column}`))}`
  for (let start = 0; start < rows.length; start += BATCH) {
    const batch = rows.slice(start, start + BATCH)
    await db`
      insert into ${db(table)} ${names}
      select ${picked}
      from json_populate_recordset(null::${db(table)}, ${db.json(batch as JSONValue)}::json) r
    `
  }
}
