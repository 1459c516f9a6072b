import type postgres from 'postgres'
import type { JSONValue, PendingQuery, Row } from 'postgres'
import type { Sql, Tx } from '../db/client'
import { RESERVE_TIMEOUT_MS, reserveWithin } from '../db/locks'
import type { RecordTable } from '../kinds/changes'

/** Tables an archive's rows are written into. */
export type ImportTable = 'children' | RecordTable

type Fragment = PendingQuery<Row[]>

/** A row of an archive as it waits to be written: its columns, and its links by the ids the archive gives. */
export interface StagedRow {
  /** The list it came from (`children`, `measurements`, `medicalEvents`, ...). */
  kind: string
  /** The position of its child in the archive. */
  child: number
  /** Its position in its list. */
  position: number
  /** Its id in the archive. */
  oldId: number
  /** Its table's columns by name; link columns hold ids of the archive. */
  row: Record<string, unknown>
}

/** A column of a staged row that holds the archive's id of another staged row of the same child. */
export interface Link {
  column: string
  kind: string
}

/** How the staged rows of one kind are written into their table. */
export interface StagedTable {
  kind: string
  table: ImportTable
  /** The columns copied from the staged row, as it names them. */
  columns: string[]
  links: Link[]
  /** Columns given the same value on every row. */
  constants?: Record<string, number>
  /** Columns computed from the row `r` and the staged rows, as SQL. */
  derived?: Record<string, Fragment>
}

/** Rows go to the stage this many to a statement, and to their tables this many. */
const STAGE_BATCH = 500
const WRITE_BATCH = 5000

/**
 * The rows of an archive, staged on a connection of their own in temporary
 * tables while the archive is read: memory holds a batch, never the archive.
 * Each batch commits on its own, so no transaction stays open while the
 * archive streams; `write` then writes them into their tables, in the order
 * of their ids in the archive, in one short transaction on that connection.
 * Temporary tables end with the connection, also when the process dies.
 */
export class RowStage {
  private batch: StagedRow[] = []

  private constructor (private readonly db: postgres.ReservedSql<{}>) {}

  static async open (sql: Sql): Promise<RowStage> {
    const db = await reserveWithin(sql, RESERVE_TIMEOUT_MS)
    try {
      await db`drop table if exists pg_temp.import_rows, pg_temp.import_ids`
      await db`
        create temporary table import_rows (
          kind text not null, child integer not null, position integer not null, old_id integer not null, row jsonb not null
        )
      `
      await db`create index on pg_temp.import_rows (kind, child, old_id)`
      await db`
        create temporary table import_ids (
          kind text not null, child integer not null, old_id integer not null, ord integer not null, new_id integer not null
        )
      `
      await db`create index on pg_temp.import_ids (kind, child, old_id)`
      await db`create index on pg_temp.import_ids (kind, ord)`
    } catch (error) {
      db.release()
      throw error
    }
    return new RowStage(db)
  }

  async add (row: StagedRow): Promise<void> {
    this.batch.push(row)
    if (this.batch.length >= STAGE_BATCH) await this.flush()
  }

  async flush (): Promise<void> {
    if (this.batch.length === 0) return
    const rows = this.batch.map(({ kind, child, position, oldId, row }) => ({ kind, child, position, old_id: oldId, row }))
    this.batch = []
    await this.db`
      insert into import_rows
      select * from json_populate_recordset(null::pg_temp.import_rows, ${this.db.json(rows as JSONValue)}::json)
    `
  }

  /** The first row whose id appears earlier in its child's list of the same kind. */
  async firstRepeatedId (): Promise<StagedRow | undefined> {
    await this.flush()
    const [row] = await this.db<StagedRow[]>`
      select r.kind, r.child, r.position, r.old_id as "oldId" from import_rows r
      where r.kind <> 'children' and exists (
        select 1 from import_rows o
        where o.kind = r.kind and o.child = r.child and o.old_id = r.old_id and o.position < r.position
      )
      order by r.child, r.position
      limit 1
    `
    return row
  }

  /** The first row of `kind` whose link names no row of `link.kind` of its child. */
  async firstBrokenLink (kind: string, link: Link): Promise<StagedRow | undefined> {
    await this.flush()
    const [row] = await this.db<StagedRow[]>`
      select r.kind, r.child, r.position, r.old_id as "oldId" from import_rows r
      where r.kind = ${kind} and r.row->>${link.column} is not null and not exists (
        select 1 from import_rows t
        where t.kind = ${link.kind} and t.child = r.child and t.old_id = (r.row->>${link.column})::integer
      )
      order by r.child, r.position
      limit 1
    `
    return row
  }

  /**
   * The first row of `kind` whose linked row is dated (`linkedDate`) after
   * the row's own date (`date.column`, or `date.whileUnset` when it is unset
   * and that is given: an illness without its end lasts until today).
   */
  async firstLinkedAfter (kind: string, link: Link, date: { column: string, whileUnset: string | null }, linkedDate: string): Promise<StagedRow | undefined> {
    await this.flush()
    const own = this.db`coalesce((r.row->>${date.column})::date, ${date.whileUnset}::date)`
    const [row] = await this.db<StagedRow[]>`
      select r.kind, r.child, r.position, r.old_id as "oldId" from import_rows r
      where r.kind = ${kind} and exists (
        select 1 from import_rows t
        where t.kind = ${link.kind} and t.child = r.child and t.old_id = (r.row->>${link.column})::integer
          and (t.row->>${linkedDate})::date > ${own}
      )
      order by r.child, r.position
      limit 1
    `
    return row
  }

  /** How many rows of each kind are staged. */
  async counts (): Promise<Map<string, number>> {
    await this.flush()
    const rows = await this.db<{ kind: string, n: number }[]>`select kind, count(*)::integer as n from import_rows group by kind`
    return new Map(rows.map(({ kind, n }) => [kind, n]))
  }

  /** Runs `work` in one transaction on the stage's connection. */
  async write<T> (work: (tx: Tx) => Promise<T>): Promise<T> {
    await this.flush()
    const tx = this.db as unknown as Tx
    await this.db`begin`
    try {
      const result = await work(tx)
      await this.db`commit`
      return result
    } catch (error) {
      await this.db`rollback`.catch(() => {})
      throw error
    }
  }

  /** Drops the staged rows and gives the connection back. */
  async close (): Promise<void> {
    try {
      await this.db`drop table if exists pg_temp.import_rows, pg_temp.import_ids`
    } finally {
      this.db.release()
    }
  }
}

/**
 * Writes the staged rows of one kind into their table, inside `RowStage.write`'s
 * transaction: new ids from the table's sequence, given in the order of the
 * ids the archive had, so that lists which break ties by id read back in the
 * same order; links turned into the new ids of their rows. Answers how many
 * rows it wrote.
 */
export async function writeStaged (tx: Tx, spec: StagedTable): Promise<number> {
  const byPosition = spec.kind === 'children'
  // The subquery's order is the order nextval runs in.
  await tx`
    insert into import_ids (kind, child, old_id, ord, new_id)
    select kind, child, old_id, ord, nextval(pg_get_serial_sequence(${spec.table}, 'id'))::integer
    from (
      select kind, child, old_id, row_number() over (order by old_id, child, position)::integer as ord
      from import_rows where kind = ${spec.kind}
      order by old_id, child, position
    ) s
  `
  const [{ count }] = await tx<{ count: number }[]>`select count(*)::integer as count from import_ids where kind = ${spec.kind}`
  const constants = Object.entries(spec.constants ?? {})
  const derived = Object.entries(spec.derived ?? {})
  const names = ['id', ...(byPosition ? [] : ['child_id']), ...spec.columns, ...spec.links.map(link => link.column), ...constants.map(([name]) => name), ...derived.map(([name]) => name)]
  const values: Fragment[] = [
    tx`i.new_id`,
    ...(byPosition ? [] : [tx`c.new_id`]),
    ...spec.columns.map(column => tx`p.${tx(column)}`),
    ...spec.links.map(link => tx`(
      select l.new_id from import_ids l
      where l.kind = ${link.kind} and l.child = r.child and l.old_id = (r.row->>${link.column})::integer
    )`),
    ...constants.map(([, value]) => tx`${value}`),
    ...derived.map(([, expression]) => expression)
  ]
  const list = values.reduce<Fragment | null>((all, value) => all === null ? value : tx`${all}, ${value}`, null) as Fragment
  // A child is staged once, at its position; a record by its id within its child.
  const joinRow = byPosition ? tx`r.kind = i.kind and r.child = i.child` : tx`r.kind = i.kind and r.child = i.child and r.old_id = i.old_id`
  const joinChild = byPosition ? tx`` : tx`join import_ids c on c.kind = 'children' and c.child = r.child`
  for (let from = 1; from <= count; from += WRITE_BATCH) {
    await tx`
      insert into ${tx(spec.table)} (${tx(names)})
      select ${list}
      from import_ids i
      join import_rows r on ${joinRow}
      ${joinChild}
      cross join lateral jsonb_populate_record(null::${tx(spec.table)}, r.row) p
      where i.kind = ${spec.kind} and i.ord between ${from} and ${from + WRITE_BATCH - 1}
      order by i.new_id
    `
  }
  return count
}
