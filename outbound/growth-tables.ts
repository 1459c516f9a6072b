import { randomBytes } from 'node:crypto'
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { sha256, TABLE_NAMES, TABLE_SOURCES, tableUrl, type TableName } from '../lib/growth/sources'

export type TableFiles = Map<TableName, Buffer>

export interface TableFilesResult {
  /** Tables whose content matches its pinned SHA-256. */
  files: TableFiles
  /** Tables not obtained, each with the reason. */
  failed: Map<TableName, string>
}

/** A WHO table is a little over 100 kB; anything much larger is not one. */
const MAX_BYTES = 2 * 1024 * 1024
const DOWNLOAD_TIMEOUT_MS = 60_000

function checked (name: TableName, content: Buffer): Buffer {
  const { file, sha256: pinned } = TABLE_SOURCES[name]
  const actual = sha256(content)
  if (actual !== pinned) throw new Error(`${file} has SHA-256 ${actual}, not the pinned ${pinned}`)
  return content
}

function reason (error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  return error.cause instanceof Error ? `${error.message}: ${error.cause.message}` : error.message
}

async function settle (names: TableName[], obtain: (name: TableName) => Promise<Buffer>): Promise<TableFilesResult> {
  const result: TableFilesResult = { files: new Map(), failed: new Map() }
  await Promise.all(names.map(async name => {
    try {
      result.files.set(name, await obtain(name))
    } catch (error) {
      result.failed.set(name, reason(error))
    }
  }))
  return result
}

/**
 * The tables found in a folder. A file that is unreadable or does not match
 * its pinned SHA-256 is refused with its reason; an absent one is only left out.
 */
export async function readTableFiles (dir: string, names: TableName[] = TABLE_NAMES): Promise<TableFilesResult> {
  const absent: TableName[] = []
  const result = await settle(names, async name => {
    try {
      return checked(name, await readFile(path.join(dir, TABLE_SOURCES[name].file)))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') absent.push(name)
      throw error
    }
  })
  for (const name of absent) result.failed.delete(name)
  return result
}

async function fetchTable (url: string, signal: AbortSignal): Promise<Buffer> {
  const response = await fetch(url, { signal })
  if (!response.ok || response.body === null) throw new Error(`${url} answered ${response.status}`)
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of response.body) {
    size += chunk.length
    if (size > MAX_BYTES) throw new Error(`${url} is larger than ${MAX_BYTES} bytes`)
    chunks.push(chunk)
  }
  return Buffer.concat(chunks)
}

/** Written beside its final name and renamed into place, so a reader never sees half a file. */
async function writeAtomically (file: string, content: Buffer): Promise<void> {
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`)
  try {
    await writeFile(temporary, content, { flag: 'wx' })
    await rename(temporary, file)
  } catch (error) {
    await rm(temporary, { force: true })
    throw error
  }
}

export interface DownloadOptions {
  /** A folder URL holding the nine files; WHO's pinned files when null. */
  mirror: string | null
  signal?: AbortSignal
}

/**
 * Downloads the named tables and keeps each only if its SHA-256 matches the
 * pinned one, writing it into `dir`. A table that cannot be written is still
 * returned, so the service can use it until the next start.
 */
export async function downloadTables (dir: string, names: TableName[], options: DownloadOptions): Promise<TableFilesResult & { unwritten: Map<TableName, string> }> {
  const signals = [AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS), ...(options.signal !== undefined ? [options.signal] : [])]
  const signal = AbortSignal.any(signals)
  const unwritten = new Map<TableName, string>()
  await mkdir(dir, { recursive: true }).catch(() => {})
  const result = await settle(names, async name => {
    const content = checked(name, await fetchTable(tableUrl(name, options.mirror), signal))
    await writeAtomically(path.join(dir, TABLE_SOURCES[name].file), content)
      .catch(error => { unwritten.set(name, reason(error)) })
    return content
  })
  return { ...result, unwritten }
}
