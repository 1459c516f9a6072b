import { Type } from '@sinclair/typebox'
import { JsonProblem, JsonReader } from '../../lib/import/json-reader'
import { ArchiveProblem, entryProblem, type EntryDigest, type ZipArchive } from '../../io/import/zip'
import { checkValue } from './checks'
import { MAX_ENTRIES, MAX_RATIO } from './limits'

export { MAX_ENTRIES, MAX_RATIO }

const MAX_MANIFEST_BYTES = 64 * 1024 * 1024

const SCHEMA_VERSION = /^\d{8}-\d{6}-[a-z0-9-]+\.sql$/

const Sha256 = Type.String({ pattern: '^[0-9a-f]{64}$' })
const ManifestFile = Type.Object({ path: Type.String({ maxLength: 300 }), size: Type.Integer({ minimum: 0 }), sha256: Sha256 }, { additionalProperties: false })
const SchemaVersion = Type.String({ pattern: SCHEMA_VERSION.source })
const MissingFile = Type.String({ maxLength: 300 })

/** What a manifest holds besides its list of files; read over, never kept. */
const INFORMATION = new Set(['exportedAt', 'serviceVersion', 'family', 'counts'])

const LIMITS = { maxText: 1024, maxNumber: 32, maxDepth: 4, maxKeys: 64, maxValue: 64 * 1024 }

export interface Manifested {
  schemaVersion: string
  sums: Map<string, EntryDigest>
  missing: Set<string>
}

/** Reads `manifest.json` as it streams: its schema version, the size and SHA-256 of every entry, and the files an export left out. */
async function readDocument (reader: JsonReader): Promise<Manifested> {
  if (!(await reader.openObject())) throw new ArchiveProblem('manifest.json: must be an object')
  const manifest: Manifested = { schemaVersion: '', sums: new Map(), missing: new Set() }
  let files = false
  for (let key = await reader.key(); key !== null; key = await reader.key()) {
    if (key === 'schemaVersion') {
      manifest.schemaVersion = checkValue(SchemaVersion, await reader.value(), 'manifest.json: schemaVersion')
    } else if (key === 'files' || key === 'missingFiles') {
      if (!(await reader.openArray())) throw new ArchiveProblem(`manifest.json: ${key} must be an array`)
      for (let at = 0; await reader.item(); at += 1) {
        if (manifest.sums.size + manifest.missing.size >= MAX_ENTRIES) throw new ArchiveProblem(`manifest.json: ${key} lists more than ${MAX_ENTRIES} files`)
        if (key === 'files') {
          const file = checkValue(ManifestFile, await reader.value(), `manifest.json: files[${at}]`)
          manifest.sums.set(file.path, { size: file.size, sha256: file.sha256 })
        } else {
          manifest.missing.add(checkValue(MissingFile, await reader.value(), `manifest.json: missingFiles[${at}]`))
        }
      }
      files ||= key === 'files'
    } else if (INFORMATION.has(key)) {
      await reader.skip()
    } else {
      throw new ArchiveProblem(`manifest.json: ${key.slice(0, 100)} is not part of a manifest`)
    }
  }
  await reader.end()
  if (manifest.schemaVersion === '') throw new ArchiveProblem('manifest.json: schemaVersion is required')
  if (!files) throw new ArchiveProblem('manifest.json: files is required')
  return manifest
}

/**
 * Reads and checks the manifest: a schema version no newer than ours, and
 * every entry of the archive listed in it and every file it lists in the
 * archive.
 */
export async function readManifest (archive: ZipArchive, ourVersion: string): Promise<Manifested> {
  if (!archive.entries.has('manifest.json')) throw new ArchiveProblem('the archive has no manifest.json')
  if (archive.sizeOf('manifest.json') > MAX_MANIFEST_BYTES) throw new ArchiveProblem(`manifest.json is larger than ${MAX_MANIFEST_BYTES} bytes`)
  const { stream } = await archive.read('manifest.json')
  const reader = new JsonReader(stream, LIMITS)
  let manifest: Manifested
  try {
    manifest = await readDocument(reader)
  } catch (error) {
    if (error instanceof JsonProblem) throw new ArchiveProblem(`manifest.json ${error.message}`)
    throw entryProblem('manifest.json', error)
  } finally {
    reader.close()
  }
  if (manifest.schemaVersion > ourVersion) {
    throw new ArchiveProblem(`the archive is of schema version ${manifest.schemaVersion}, newer than this service's ${ourVersion}: update the service first`)
  }
  for (const name of archive.entries.keys()) {
    if (name !== 'manifest.json' && !manifest.sums.has(name)) throw new ArchiveProblem(`the entry ${name} is not in the manifest`)
  }
  for (const name of manifest.sums.keys()) {
    if (!archive.entries.has(name)) throw new ArchiveProblem(`${name} is in the manifest but not in the archive`)
  }
  return manifest
}

/** Refuses an entry whose size or SHA-256 is not the manifest's. */
export function checkSum (manifest: Manifested, name: string, found: EntryDigest): void {
  const expected = manifest.sums.get(name)
  if (expected === undefined || expected.sha256 !== found.sha256 || expected.size !== found.size) {
    throw new ArchiveProblem(`the SHA-256 of ${name} does not match the manifest`)
  }
}
