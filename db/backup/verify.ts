import { Digest, FORMAT, FORMAT_VERSION, MANIFEST, MANIFEST_SUM, readArchive, sha256, type ArchiveSource, type Manifest } from './archive'
import { DamagedBackupError } from './encryption'
import { megabytes, type Progress } from './progress'

const MAX_MANIFEST_BYTES = 256 * 1024 * 1024

export class DamagedArchiveError extends Error {
  constructor (problem: string) {
    super(`the archive is damaged: ${problem}; nothing was restored`)
    this.name = 'DamagedArchiveError'
  }
}

async function text (content: AsyncIterable<Buffer>, size: number, name: string): Promise<string> {
  if (size > MAX_MANIFEST_BYTES) throw new DamagedArchiveError(`${name} is too large`)
  const chunks: Buffer[] = []
  for await (const chunk of content) chunks.push(chunk)
  return Buffer.concat(chunks).toString('utf8')
}

function parseManifest (content: string | null, sum: string | null): Manifest {
  if (content === null || sum === null) throw new DamagedArchiveError('it has no manifest')
  if (sha256(content) !== sum.trim()) throw new DamagedArchiveError('the manifest does not match its checksum')
  let manifest: Manifest
  try {
    manifest = JSON.parse(content)
  } catch {
    throw new DamagedArchiveError('the manifest is not JSON')
  }
  if (manifest.format !== FORMAT) throw new DamagedArchiveError('it is not a backup of this service')
  if (manifest.formatVersion !== FORMAT_VERSION) throw new Error(`the archive has backup format ${manifest.formatVersion}, this release reads format ${FORMAT_VERSION}`)
  return manifest
}

/**
 * Reads the whole archive and checks every entry against the manifest: its
 * SHA-256, its size, nothing missing and nothing extra.
 */
export async function verifyArchive (archive: ArchiveSource, progress: Progress): Promise<Manifest> {
  const total = archive.size
  const found = new Map<string, { bytes: number, sha256: string }>()
  let manifestText: string | null = null
  let manifestSum: string | null = null
  let read = 0
  try {
    for await (const entry of readArchive(archive)) {
      if (found.has(entry.name) || (entry.name === MANIFEST && manifestText !== null)) throw new DamagedArchiveError(`${entry.name} appears twice`)
      if (entry.name === MANIFEST) manifestText = await text(entry.content, entry.size, entry.name)
      else if (entry.name === MANIFEST_SUM) manifestSum = await text(entry.content, entry.size, entry.name)
      else {
        const digest = new Digest()
        for await (const chunk of entry.content) digest.add(chunk)
        found.set(entry.name, { bytes: digest.bytes, sha256: digest.sha256() })
      }
      read += entry.size
      progress.tick(() => `checked ${megabytes(read)} of ${megabytes(total)}`)
    }
  } catch (error) {
    if (error instanceof DamagedArchiveError || error instanceof DamagedBackupError || !(error instanceof Error)) throw error
    throw new DamagedArchiveError(error.message)
  }
  const manifest = parseManifest(manifestText, manifestSum)
  const listed = [...manifest.tables, ...manifest.files]
  for (const item of listed) {
    const actual = found.get(item.entry)
    if (actual === undefined) throw new DamagedArchiveError(`${item.entry} is missing`)
    if (actual.bytes !== item.bytes || actual.sha256 !== item.sha256) throw new DamagedArchiveError(`${item.entry} does not match its checksum`)
    found.delete(item.entry)
  }
  const extra = [...found.keys()]
  if (extra.length > 0) throw new DamagedArchiveError(`${extra[0]} is not in the manifest`)
  progress.tick(() => `checked ${listed.length} entries, ${megabytes(total)}: every checksum matches`, true)
  return manifest
}
