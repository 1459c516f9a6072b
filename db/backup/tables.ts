import type { Db } from '../client'

/** A table whose rows a backup holds: every ordinary table of the schema but the migration record. */
export interface TableInfo {
  name: string
  columns: string[]
}

/** The last value handed out by a serial column's sequence, or null when it has never been used. */
export interface SequenceValue {
  table: string
  column: string
  lastValue: number | null
}

export function quoteName (name: string): string {
  return `"${name.replace(/"/g, '""')}"`
}

export function columnList (table: TableInfo): string {
  return table.columns.map(quoteName).join(', ')
}

/** Tables in an order that loads every referenced table before the tables that reference it. */
function parentsFirst (tables: TableInfo[], links: Array<{ child: string, parent: string }>): TableInfo[] {
  const parents = new Map(tables.map(table => [table.name, new Set<string>()]))
  for (const { child, parent } of links) {
    if (child !== parent && parents.has(parent)) parents.get(child)?.add(parent)
  }
  const placed = new Set<string>()
  const ordered: TableInfo[] = []
  while (ordered.length < tables.length) {
    const ready = tables.filter(table => !placed.has(table.name) && [...(parents.get(table.name) ?? [])].every(name => placed.has(name)))
    if (ready.length === 0) {
      const left = tables.filter(table => !placed.has(table.name)).map(table => table.name)
      throw new Error(`the tables ${left.join(', ')} reference each other in a cycle`)
    }
    for (const table of ready) placed.add(table.name)
    ordered.push(...ready)
  }
  return ordered
}

export async function dataTables (db: Db): Promise<TableInfo[]> {
  const tables = await db<TableInfo[]>`
    select
      c.relname::text as name,
      array(
        select a.attname::text
        from pg_attribute a
        where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''
        order by a.attnum
      ) as columns
    from pg_class c
    join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = current_schema() and c.relkind = 'r' and c.relname <> 'migrations'
    order by c.relname
  `
  const links = await db<Array<{ child: string, parent: string }>>`
    select distinct c.relname::text as child, p.relname::text as parent
    from pg_constraint k
    join pg_class c on c.oid = k.conrelid
    join pg_class p on p.oid = k.confrelid
    join pg_namespace n on n.oid = c.relnamespace
    where k.contype = 'f' and n.nspname = current_schema()
  `
  return parentsFirst([...tables], [...links])
}

export async function sequenceValues (db: Db): Promise<SequenceValue[]> {
  return db<SequenceValue[]>`
    select c.relname::text as table, a.attname::text as column, pg_sequence_last_value(s.name::regclass) as "lastValue"
    from pg_class c
    join pg_namespace n on n.oid = c.relnamespace
    join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
    cross join lateral (select pg_get_serial_sequence(format('%I.%I', n.nspname, c.relname), a.attname) as name) s
    where n.nspname = current_schema() and c.relkind = 'r' and c.relname <> 'migrations' and s.name is not null
    order by 1, 2
  `
}

/**
 * Moves each serial sequence past both the highest id loaded and the value it
 * had in the backup, so that no id is handed out twice.
 */
export async function restoreSequences (db: Db, recorded: SequenceValue[]): Promise<void> {
  for (const { table, column } of await sequenceValues(db)) {
    const before = recorded.find(item => item.table === table && item.column === column)?.lastValue ?? 0
    const [{ highest }] = await db.unsafe(`select coalesce(max(${quoteName(column)}), 0)::int8 as highest from ${quoteName(table)}`)
    const value = Math.max(Number(highest), before)
    await db`select setval(pg_get_serial_sequence(${quoteName(table)}, ${column}), ${Math.max(value, 1)}, ${value > 0})`
  }
}

export async function appliedMigrations (db: Db): Promise<string[] | null> {
  const [{ found }] = await db`select to_regclass('migrations') is not null as found`
  if (found !== true) return null
  const rows = await db<Array<{ name: string }>>`select name from migrations order by name`
  return rows.map(row => row.name)
}

/** Whether any table holds a row. */
export async function anyRows (db: Db, tables: TableInfo[]): Promise<boolean> {
  for (const table of tables) {
    const [{ found }] = await db.unsafe(`select exists (select 1 from ${quoteName(table.name)}) as found`)
    if (found === true) return true
  }
  return false
}
