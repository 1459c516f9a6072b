import { createHash, type Hash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { Transform, type Readable, type TransformCallback, type Writable } from 'node:stream'
import tar from 'tar-stream'
import type { SequenceValue } from './tables'

/**
 * A backup is a tar file: one entry per table (`tables/<name>.copy`, PostgreSQL
 * COPY text, parents before the tables that reference them), one per stored
 * file (`uploads/…`, `avatars/…`), then `manifest.json` and its SHA-256.
 */
export const FORMAT = 'child-health-backup'
export const FORMAT_VERSION = 1
export const MANIFEST = 'manifest.json'
export const MANIFEST_SUM = 'manifest.json.sha256'

export interface TableEntry {
  name: string
  entry: string
  columns: string[]
  rows: number
  bytes: number
  sha256: string
}

export interface FileEntry {
  entry: string
  bytes: number
  sha256: string
}

export interface Manifest {
  format: typeof FORMAT
  formatVersion: typeof FORMAT_VERSION
  serviceVersion: string
  createdAt: string
  /** The applied migrations, in order: the schema the rows belong to. */
  schemaVersion: string[]
  tables: TableEntry[]
  sequences: SequenceValue[]
  files: FileEntry[]
}

export function tableEntry (name: string): string {
  return `tables/${name}.copy`
}

/** Passes bytes through while counting them, their lines and their SHA-256. */
export class Digest extends Transform {
  bytes = 0
  lines = 0
  private readonly hash: Hash = createHash('sha256')

  add (chunk: Buffer): void {
    this.bytes += chunk.length
    for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) this.lines += 1
    this.hash.update(chunk)
  }

  override _transform (chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.add(chunk)
    done(null, chunk)
  }

  sha256 (): string {
    return this.hash.digest('hex')
  }
}

export function sha256 (content: Buffer | string): string {
  return createHash('sha256').update(content).digest('hex')
}

/** Adds one entry of a known size to the archive, streaming its content. */
export function addEntry (pack: tar.Pack, header: { name: string, size: number, mode?: number, mtime?: Date }, content: Readable): Promise<void> {
  return new Promise((resolve, reject) => {
    const entry = pack.entry({ ...header, type: 'file' }, error => error ? reject(error) : resolve())
    content.on('error', error => {
      entry.destroy(error)
      reject(error)
    })
    content.pipe(entry as unknown as Writable)
  })
}

export interface ArchiveEntry {
  name: string
  size: number
  mode: number
  content: AsyncIterable<Buffer>
}

/** Where an archive's bytes come from: a plain file, or an encrypted one decrypted as it is read. */
export interface ArchiveSource {
  /** The archive's size in bytes. */
  size: number
  /** A new stream of the archive's bytes from the start; it can be opened again. */
  open: () => Readable
}

export async function plainArchive (file: string): Promise<ArchiveSource> {
  const { size } = await stat(file)
  return { size, open: () => createReadStream(file) }
}

/** The entries of an archive in order; each must be read (or drained) before the next. */
export async function * readArchive (archive: ArchiveSource): AsyncGenerator<ArchiveEntry> {
  const extract = tar.extract()
  const source = archive.open()
  source.on('error', error => extract.destroy(error))
  source.pipe(extract as unknown as Writable)
  try {
    for await (const entry of extract) {
      const { name, size = 0, mode = 0o600, type } = entry.header
      if (type !== 'file') throw new Error(`the archive holds an unexpected ${type ?? 'entry'} ${name}`)
      yield { name, size, mode, content: entry as AsyncIterable<Buffer> }
      entry.resume()
    }
  } finally {
    source.destroy()
    extract.destroy()
  }
}
