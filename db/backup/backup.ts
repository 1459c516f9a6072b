import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { chmod, open, rename, rm } from 'node:fs/promises'
import { pipeline as pipelineStreams, Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import tar from 'tar-stream'
import type { Sql, Tx } from '../client'
import { addEntry, Digest, FORMAT, FORMAT_VERSION, MANIFEST, MANIFEST_SUM, sha256, tableEntry, type FileEntry, type Manifest, type TableEntry } from './archive'
import type { Sealer } from './encryption'
import { storedFiles, type FileRoots, type StoredFile } from './files'
import { megabytes, plural, type Progress } from './progress'
import { appliedMigrations, columnList, dataTables, quoteName, sequenceValues, type TableInfo } from './tables'
import { steps, type Bounds, type Steps } from './bounds'
import { copyOut } from './copy-out'

export interface BackupOptions {
  roots: FileRoots
  serviceVersion: string
  progress: Progress
  /** Encrypts the archive as it is written. */
  encryption?: Sealer
  bounds: Bounds
}

/** The files a backup writes beside `out` before the archive is renamed into place. */
export function temporaryFiles (out: string): { partial: string, spool: string } {
  return { partial: `${out}.partial`, spool: `${out}.spool` }
}

/**
 * The rows go through a spool file readable by its owner only, since a tar
 * entry needs its size first. The spool is encrypted with a key kept in
 * memory only, so that no rows lie on disk in plain text, even for a moment.
 */
async function backupTable (tx: Tx, pack: tar.Pack, table: TableInfo, spool: string): Promise<TableEntry> {
  const digest = new Digest()
  const key = randomBytes(32)
  const iv = randomBytes(16)
  const rows = await copyOut(tx, `copy ${quoteName(table.name)} (${columnList(table)}) to stdout`)
  await pipeline(rows, digest, createCipheriv('aes-256-ctr', key, iv), createWriteStream(spool, { mode: 0o600 }))
  const entry = tableEntry(table.name)
  const content = pipelineStreams(createReadStream(spool), createDecipheriv('aes-256-ctr', key, iv), () => {})
  await addEntry(pack, { name: entry, size: digest.bytes, mode: 0o600 }, content)
  return { name: table.name, entry, columns: table.columns, rows: digest.lines, bytes: digest.bytes, sha256: digest.sha256() }
}

/** A file is read through a handle opened once, so that it can be removed meanwhile without tearing the archive. */
async function backupFile (pack: tar.Pack, stored: StoredFile): Promise<FileEntry | null> {
  let handle
  try {
    handle = await open(stored.file, 'r')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
  try {
    const { size, mode, mtime } = await handle.stat()
    const content = size === 0 ? Readable.from([]) : handle.createReadStream({ start: 0, end: size - 1, autoClose: false })
    const digest = new Digest()
    content.on('error', (error: Error) => digest.destroy(error))
    await addEntry(pack, { name: stored.entry, size, mode: mode & 0o777, mtime }, content.pipe(digest))
    return { entry: stored.entry, bytes: size, sha256: digest.sha256() }
  } finally {
    await handle.close()
  }
}

async function backupFiles (pack: tar.Pack, files: StoredFile[], progress: Progress, bounded: Steps): Promise<FileEntry[]> {
  const entries: FileEntry[] = []
  let bytes = 0
  for (const [index, stored] of files.entries()) {
    const entry = await bounded.run(`copying the file ${stored.entry}`, () => backupFile(pack, stored))
    if (entry === null) progress.note(`${stored.entry} was removed while the backup ran; left out`)
    else entries.push(entry)
    bytes += entry?.bytes ?? 0
    progress.tick(() => `files ${index + 1}/${files.length} (${megabytes(bytes)})`, index === files.length - 1)
  }
  return entries
}

/**
 * Writes a backup to `out`: every table from one REPEATABLE READ snapshot,
 * every stored file, then the manifest. The archive is written beside `out`
 * and renamed into place once complete, readable by its owner only; with
 * `encryption`, it is encrypted as it is written. Each step has `bounds.stepMs`
 * and the whole `bounds.totalMs`: past either, it fails with a BackupTimeout
 * and the caller closes its connections. On any failure, nothing is left
 * beside `out`.
 */
export async function writeBackup (sql: Sql, out: string, { roots, serviceVersion, progress, encryption, bounds }: BackupOptions): Promise<Manifest> {
  const { partial, spool } = temporaryFiles(out)
  await rm(partial, { force: true })
  await rm(spool, { force: true })
  const bounded = steps(bounds)
  let stopped = false
  const pack = tar.pack()
  const file = createWriteStream(partial, { mode: 0o600 })
  const written = encryption === undefined
    ? pipeline(pack as unknown as Readable, file)
    : pipeline(pack as unknown as Readable, encryption.stream(), file)
  written.catch(() => {})
  const snapshotOf = async (tx: Tx) => {
    await bounded.run('opening the snapshot', async () => {
      await tx`set local timezone = 'UTC'`
      await tx`set local datestyle = 'ISO, YMD'`
    })
    const schemaVersion = await bounded.run('reading the schema version', () => appliedMigrations(tx))
    if (schemaVersion === null) throw new Error('the database has no schema yet: run the migrate command first')
    const files = await bounded.run('listing the stored files', () => storedFiles(roots))
    const sequences = await bounded.run('reading the sequences', () => sequenceValues(tx))
    const tables: TableEntry[] = []
    for (const table of await bounded.run('listing the tables', () => dataTables(tx))) {
      if (stopped) throw new Error('the backup stopped')
      tables.push(await bounded.run(`copying the table ${table.name}`, () => backupTable(tx, pack, table, spool)))
      progress.note(`${table.name}: ${plural(tables[tables.length - 1].rows, 'row')}`)
    }
    return { schemaVersion, files, sequences, tables }
  }
  try {
    // The transaction is raced, not only its steps: once a step has failed, its
    // rollback may wait on the connection that is stuck. A rollback refused
    // during a copy would hide the failure: the first failure is the one told.
    let failure: unknown = null
    const snapshot = await bounded.race(sql.begin('isolation level repeatable read read only', async tx => {
      try {
        return await snapshotOf(tx)
      } catch (error) {
        failure ??= error
        throw error
      }
    }).catch(error => { throw failure ?? error }))
    const files = await backupFiles(pack, snapshot.files, progress, bounded)
    const manifest: Manifest = {
      format: FORMAT,
      formatVersion: FORMAT_VERSION,
      serviceVersion,
      createdAt: new Date().toISOString(),
      schemaVersion: snapshot.schemaVersion,
      tables: snapshot.tables,
      sequences: snapshot.sequences,
      files
    }
    const text = JSON.stringify(manifest, null, 2) + '\n'
    pack.entry({ name: MANIFEST, mode: 0o600 }, text)
    pack.entry({ name: MANIFEST_SUM, mode: 0o600 }, `${sha256(text)}\n`)
    pack.finalize()
    await bounded.run('writing the archive', async () => {
      await written
      const handle = await open(partial, 'r')
      await handle.sync().finally(() => handle.close())
    })
    await chmod(partial, 0o600)
    await rename(partial, out)
    return manifest
  } catch (error) {
    stopped = true
    pack.destroy(error as Error)
    await rm(partial, { force: true })
    throw error
  } finally {
    bounded.stop()
    await rm(spool, { force: true })
  }
}
