import { createWriteStream, existsSync } from 'node:fs'
import { rename, rm } from 'node:fs/promises'
import { pipeline } from 'node:stream/promises'
import type { Sql, Tx } from '../client'
import { Digest, readArchive, type ArchiveSource, type Manifest, type TableEntry } from './archive'
import { filePath, stagingName, storedFiles, type FileRoots } from './files'
import { plural, type Progress } from './progress'
import { anyRows, appliedMigrations, columnList, dataTables, quoteName, restoreSequences, type TableInfo } from './tables'
import { verifyArchive } from './verify'

export interface RestoreOptions {
  roots: FileRoots
  /** Replace everything in a non-empty instance. */
  replace: boolean
  progress: Progress
}

function last (names: string[]): string {
  return names.length === 0 ? 'no migrations' : `${names[names.length - 1]} (${names.length} migrations)`
}

function checkSchema (manifest: Manifest, applied: string[], tables: TableInfo[]): void {
  if (manifest.schemaVersion.join('\n') !== applied.join('\n')) {
    throw new Error(`the backup is of schema version ${last(manifest.schemaVersion)}, this database is at ${last(applied)}: restore into an instance migrated to the backup's version`)
  }
  const ours = tables.map(table => `${table.name}(${table.columns.join(',')})`).sort().join(' ')
  const theirs = manifest.tables.map(table => `${table.name}(${table.columns.join(',')})`).sort().join(' ')
  if (ours !== theirs) throw new Error('the backup\'s tables differ from this database\'s although their schema versions match')
}

async function refuseNonEmpty (db: Sql | Tx, tables: TableInfo[], roots: FileRoots): Promise<void> {
  if (await anyRows(db, tables)) throw new Error('this instance is not empty: its database has records; restore with --replace to replace them')
  const files = await storedFiles(roots)
  if (files.length > 0) throw new Error(`this instance is not empty: it has stored files (${files[0].file}); restore with --replace to replace them`)
}

async function loadTable (tx: Tx, table: TableEntry, content: AsyncIterable<Buffer>): Promise<void> {
  const copy = await tx.unsafe(`copy ${quoteName(table.name)} (${columnList(table)}) from stdin`).writable()
  const digest = new Digest()
  await pipeline(content, digest, copy)
  if (digest.sha256() !== table.sha256) throw new Error(`${table.entry} changed in the archive while it was restored`)
  const [{ rows }] = await tx.unsafe(`select count(*)::int8 as rows from ${quoteName(table.name)}`)
  if (Number(rows) !== table.rows) throw new Error(`${table.name}: loaded ${rows} rows, the backup has ${table.rows}`)
}

/**
 * The tables whose rows the change log follows (their triggers call
 * track_change or track_statement), parents first: each after the tables
 * its foreign keys name.
 */
async function trackedTables (tx: Tx): Promise<string[]> {
  const tables = await tx<Array<{ name: string, parents: string[] }>>`
    select c.relname as name, array(
      select distinct r.relname::text from pg_constraint k join pg_class r on r.oid = k.confrelid
      where k.conrelid = c.oid and k.contype = 'f' and k.confrelid <> c.oid
    ) as parents
    from pg_class c
    where c.relnamespace = current_schema()::regnamespace and exists (
      select 1 from pg_trigger g join pg_proc p on p.oid = g.tgfoid
      where g.tgrelid = c.oid and p.proname in ('track_change', 'track_statement')
    )
    order by c.oid
  `
  const byName = new Map(tables.map(table => [table.name, table]))
  const order: string[] = []
  const place = (name: string): void => {
    const table = byName.get(name)
    if (table === undefined || order.includes(name)) return
    byName.delete(name)
    for (const parent of table.parents) place(parent)
    order.push(name)
  }
  for (const { name } of tables) place(name)
  return order
}

/**
 * A restore replaces every family's data: each family gets a new epoch, so
 * that cursors of the data before no longer work, and every restored row one
 * change `updated` (its version moves on), recorded for no user.
 */
async function recordRestore (tx: Tx, tables: TableInfo[]): Promise<void> {
  const present = new Set(tables.map(table => table.name))
  if (!present.has('family_clocks')) return
  await tx`select set_config('app.tracking', 'on', true)`
  await tx`update family_clocks set epoch = substr(md5(random()::text || clock_timestamp()::text), 1, 10)`
  for (const table of await trackedTables(tx)) {
    if (!present.has(table)) continue
    // The version trigger moves every row on; the families' row has its version in the clock.
    if (table === 'families') await tx`update families set name = name`
    else await tx.unsafe(`update ${quoteName(table)} set version = version`)
  }
}

/** Writes a file under a temporary name beside its place; it is renamed into place before the commit. */
async function stageFile (content: AsyncIterable<Buffer>, file: string, mode: number, sha256: string): Promise<string> {
  const staging = await stagingName(file)
  const digest = new Digest()
  try {
    await pipeline(content, digest, createWriteStream(staging, { mode: mode & 0o666 }))
    if (digest.sha256() !== sha256) throw new Error(`${file} changed in the archive while it was restored`)
  } catch (error) {
    await rm(staging, { force: true })
    throw error
  }
  return staging
}

/**
 * Restores a backup into an instance migrated to the same schema version. The
 * whole archive is checked first; then, in one transaction with the tables
 * locked against writes, the rows are loaded with their ids, the sequences
 * moved past them and the files put in place. A failure leaves the instance
 * as it was. An encrypted backup is decrypted as it is read, both times; its
 * plaintext is never written to disk.
 */
export async function restoreBackup (sql: Sql, archive: ArchiveSource, { roots, replace, progress }: RestoreOptions): Promise<Manifest> {
  const applied = await appliedMigrations(sql)
  if (applied === null) throw new Error('the database has no schema yet: run the migrate command first, then restore')
  const tables = await dataTables(sql)
  if (!replace) await refuseNonEmpty(sql, tables, roots)

  const manifest = await verifyArchive(archive, progress)
  checkSchema(manifest, applied, tables)
  const byEntry = new Map(manifest.tables.map(table => [table.entry, table]))
  const files = new Map(manifest.files.map(item => [item.entry, { ...item, file: filePath(roots, item.entry) }]))
  const before = replace ? await storedFiles(roots) : []
  const existed = new Set(before.map(item => item.file))

  const staged: Array<{ staging: string, target: string }> = []
  const placed: string[] = []
  try {
    await sql.begin(async tx => {
      await tx`set local datestyle = 'ISO, YMD'`
      // The backup holds its own change log: loading it records nothing.
      await tx`select set_config('app.tracking', 'off', true)`
      const names = manifest.tables.map(table => quoteName(table.name)).join(', ')
      await tx.unsafe(`lock table ${names} in exclusive mode`)
      if (replace) await tx.unsafe(`truncate ${names} restart identity`)
      else await refuseNonEmpty(tx, tables, roots)
      for await (const entry of readArchive(archive)) {
        const table = byEntry.get(entry.name)
        const stored = files.get(entry.name)
        if (table !== undefined) {
          await loadTable(tx, table, entry.content)
          progress.note(`${table.name}: ${plural(table.rows, 'row')}`)
        } else if (stored !== undefined) {
          staged.push({ staging: await stageFile(entry.content, stored.file, entry.mode, stored.sha256), target: stored.file })
          progress.tick(() => `files ${staged.length}/${files.size}`, staged.length === files.size)
        }
      }
      await restoreSequences(tx, manifest.sequences)
      await recordRestore(tx, tables)
      for (const { staging, target } of staged) {
        await rename(staging, target)
        placed.push(target)
      }
    })
  } catch (error) {
    for (const { staging } of staged) await rm(staging, { force: true })
    for (const target of placed) if (!existed.has(target)) await rm(target, { force: true })
    throw error
  }
  const kept = new Set([...files.values()].map(item => item.file))
  for (const old of before) {
    if (!kept.has(old.file) && existsSync(old.file)) await rm(old.file, { force: true })
  }
  return manifest
}
