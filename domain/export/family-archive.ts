import path from 'node:path'
import { openObject } from '../../lib/export/bundle'
import type { Spool } from '../../io/export/spool'
import type { ZipWriter } from '../../io/export/zip'
import { isPlainFileName } from '../../io/stored-files'
import type { Tx } from '../../db/client'
import { familyStoredNames, type FamilyChild, type FamilyMemberName } from '../../sql/export'
import { recordKinds, type RecordKey } from '../../kinds'
import { readChild, writeChildBundle, writeChildDocument, type ApiChild, type ChildCounts, type ExportHead, type GrowthCharts } from './child-records'

export interface FamilyHead {
  head: ExportHead
  family: { id: number, name: string } & Record<string, unknown>
  members: FamilyMemberName[]
  children: FamilyChild[]
}

/** Where a warning goes: the request's log. */
interface WarningLog {
  warn: (details: object, message: string) => void
}

export interface ArchiveOptions {
  charts: GrowthCharts
  uploadDir: string
  avatarDir: string
  serviceVersion: string
  log: WarningLog
}

type Counts = ChildCounts & { members: number, children: number, avatars: number, files: number }

/** What the snapshot gave: the documents in the spool, and the files to add from disk. */
export interface SpooledFamily {
  family: FamilyHead
  /** Spool sections, in archive order, each under its entry name. */
  documents: string[]
  /** Stored names of the family's attachments. */
  attachments: string[]
  counts: Counts
}

/** No record of any kind, by the kinds' keys in the registry's order. */
function noRecords (): Record<RecordKey, number> {
  return Object.fromEntries(recordKinds.map(({ key }) => [key, 0])) as Record<RecordKey, number>
}

async function child (tx: Tx, id: number): Promise<ApiChild> {
  const found = await readChild(tx, id)
  // The snapshot that listed the child still holds it.
  if (found === undefined) throw new Error(`child ${id} is missing from its own snapshot`)
  return found
}

/**
 * Writes a family's documents into the spool within its snapshot:
 * `family.json` (the family, its members' names and roles, and each child's
 * JSON export) and `fhir/<childId>.json` (each child's FHIR bundle), and
 * reads the stored names of its files. Nothing waits on the client here.
 */
export async function spoolFamily (spool: Spool, tx: Tx, family: FamilyHead, options: ArchiveOptions, signal: AbortSignal): Promise<SpooledFamily> {
  const counts: Counts = {
    members: family.members.length,
    children: family.children.length,
    ...noRecords(),
    attachments: 0,
    avatars: 0,
    files: 0
  }
  const { head } = family
  await spool.write('family.json', signal, async out => {
    await out.write(`${openObject(head)}"family":${JSON.stringify(family.family)},"members":${JSON.stringify(family.members)},"children":[`)
    for (const [index, { id }] of family.children.entries()) {
      if (index > 0) await out.write(',')
      const written = await writeChildDocument(out, tx, head, await child(tx, id), options.charts)
      for (const key of Object.keys(written) as Array<keyof ChildCounts>) counts[key] += written[key]
    }
    await out.write(']}')
  })
  const documents = ['family.json']
  for (const { id } of family.children) {
    const found = await child(tx, id)
    await spool.write(`fhir/${id}.json`, signal, out => writeChildBundle(out, tx, found, head.exportedAt, options.charts))
    documents.push(`fhir/${id}.json`)
  }
  const attachments: string[] = []
  for await (const batch of familyStoredNames(tx, family.family.id)) {
    for (const { storedName } of batch) attachments.push(storedName)
  }
  return { family, documents, attachments, counts }
}

/** Copies a stored file into `files/`; answers false when it is not on disk. */
async function copyStored (zip: ZipWriter, dir: string, name: string): Promise<boolean> {
  if (!isPlainFileName(name)) return false
  return zip.copy(`files/${name}`, path.join(dir, name))
}

async function writeFiles (zip: ZipWriter, spooled: SpooledFamily, options: ArchiveOptions): Promise<string[]> {
  const { counts } = spooled
  const missing: string[] = []
  const copy = async (dir: string, name: string): Promise<void> => {
    if (await copyStored(zip, dir, name)) counts.files += 1
    else missing.push(`files/${name}`)
  }
  for (const name of spooled.attachments) await copy(options.uploadDir, name)
  for (const { avatarName } of spooled.family.children) {
    if (avatarName === null) continue
    counts.avatars += 1
    await copy(options.avatarDir, avatarName)
  }
  if (missing.length > 0) options.log.warn({ files: missing }, 'stored files missing from disk were left out of a family export')
  return missing
}

/**
 * A family's whole record as a ZIP archive, streamed after the snapshot has
 * closed: the spooled documents, `files/<stored name>` (every attachment and
 * avatar, from disk), and last `manifest.json` with the counts and the
 * SHA-256 of every other entry. Files that are gone from disk are listed as
 * `missingFiles`.
 */
export async function writeFamilyArchive (zip: ZipWriter, spool: Spool, spooled: SpooledFamily, options: ArchiveOptions): Promise<void> {
  for (const name of spooled.documents) await zip.stream(name, spool.read(name))
  const missingFiles = await writeFiles(zip, spooled, options)
  const { family } = spooled
  const manifest = {
    ...family.head,
    serviceVersion: options.serviceVersion,
    family: { id: family.family.id, name: family.family.name },
    counts: spooled.counts,
    files: zip.files,
    missingFiles
  }
  await zip.write('manifest.json', out => out.write(JSON.stringify(manifest, null, 2)))
  await zip.finish()
}
