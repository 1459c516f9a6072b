import { mkdir } from 'node:fs/promises'
import type { Sql, Tx } from '../../db/client'
import { QueueFull } from '../../lib/fair-queue'
import { isServableName } from '../../lib/files/names'
import { JsonProblem, JsonReader } from '../../lib/import/json-reader'
import { ArchiveProblem, entryProblem, ZipArchive } from '../../io/import/zip'
import { beginChange } from '../../sql/changes'
import { exportSnapshot } from '../../sql/export'
import { addMember, findFamily, insertFamily, type Family } from '../../sql/families'
import { RowStage, writeStaged, type Link, type StagedTable } from '../../sql/import'
import { recordKinds, type RecordKey, type RegisteredKind } from '../../kinds'
import { latestAllowedDate } from '../../kinds/rules'
import { DOCUMENT_LIMITS, readFamilyDocument, type DocumentSink, type FamilyDocument } from './document'
import { checkSum, MAX_ENTRIES, MAX_RATIO, readManifest } from './manifest'
import { Staging } from './staging'
import { unpackAttachment, unpackAvatar, type ImportOptions, type Reading } from './unpack'
import { CHILD_FIELDS, CHILD_FIELD_NAMES, childColumns } from '../../lib/child-fields'
import { ATTACHMENT_LINKS, ATTACHMENT_LINK_FIELDS, linkColumns } from '../../lib/attachment-links'

export type { ImportOptions }

export { ArchiveProblem, MAX_ENTRIES, MAX_RATIO }
export { ALWAYS_LISTED } from './document'

const MAX_DOCUMENT_BYTES = 256 * 1024 * 1024

export type ImportCounts = Record<RecordKey | 'children' | 'attachments' | 'files', number>

type Values = Record<string, unknown>

const FHIR_ENTRY = /^fhir\/[1-9]\d{0,9}\.json$/

/** The names an export writes: its two documents, a FHIR bundle per child, and the stored files. */
function isExportEntry (name: string): boolean {
  return name === 'family.json' || name === 'manifest.json' || FHIR_ENTRY.test(name) ||
    (name.startsWith('files/') && isServableName(name.slice('files/'.length)))
}

/** The archive entry of a stored file named by a URL (`/uploads/<name>`, `/avatars/<name>`). */
function entryOf (url: string): string {
  return `files/${url.slice(url.lastIndexOf('/') + 1)}`
}

const specs = new Map(recordKinds.map(({ key, spec }) => [key, spec]))

const VISIT: Link = { column: 'visit_id', kind: 'visits' }
/** The column of a staged visit's date. */
const VISIT_DATE = 'date'

/**
 * The links of a child's rows to other rows of the same child, as the archive
 * gives them: a record's visit, a record's parent (a reading's illness), and
 * an attachment's visit, measurement or illness.
 */
const LINKS: Array<{ kind: string, field: string, link: Link }> = [
  ...recordKinds.flatMap(({ key, spec }) => [
    ...(spec.writable.includes('visitId') ? [{ kind: key, field: 'visitId', link: VISIT }] : []),
    ...(spec.parent === undefined ? [] : [{ kind: key, field: spec.parent.param, link: { column: spec.parent.column, kind: spec.parent.kind.key } }])
  ]),
  ...ATTACHMENT_LINK_FIELDS.map(field => ({ kind: 'attachments', field, link: ATTACHMENT_LINKS[field] }))
]

const CHILD_COLUMNS = [...CHILD_FIELD_NAMES.map(name => CHILD_FIELDS[name].column), 'avatar_name', 'avatar_size_bytes']
const ATTACHMENT_COLUMNS = ['file_name', 'stored_name', 'content_type', 'size_bytes']

/** A record's columns as staged: its writable fields, and the link to its parent (a reading's illness). */
function recordColumns (spec: RegisteredKind, row: Values): Values {
  const columns: Values = {}
  for (const field of spec.writable) columns[spec.columns[field]] = row[field] ?? null
  if (spec.parent !== undefined) columns[spec.parent.column] = row[spec.parent.param]
  return columns
}

/** The kinds in the order they are written: each after the kinds its rows link to (visits first, readings after their illnesses). */
function writeOrder (): RecordKey[] {
  const order: RecordKey[] = []
  const place = (key: RecordKey): void => {
    if (order.includes(key)) return
    for (const { link } of LINKS.filter(link => link.kind === key)) place(link.kind as RecordKey)
    order.push(key)
  }
  for (const { key } of recordKinds) place(key)
  return order
}

/** How each kind of record is written from the stage. */
function recordTables (tx: Tx): StagedTable[] {
  return writeOrder().map(key => {
    const spec = specs.get(key) as RegisteredKind
    const links = LINKS.filter(link => link.kind === key).map(({ link }) => link)
    const linked = new Set(links.map(link => link.column))
    const derived = Object.entries(spec.archiveDerived ?? {}).map(([column, expression]) => [column, tx.unsafe(expression)])
    return {
      kind: key,
      table: spec.table,
      columns: spec.writable.map(field => spec.columns[field]).filter(column => !linked.has(column)),
      links,
      ...(derived.length === 0 ? {} : { derived: Object.fromEntries(derived) })
    }
  })
}

/** Refuses the first row whose id repeats within its list, or whose link names no row of its child. */
async function checkStagedRows (stage: RowStage): Promise<void> {
  const place = (row: { kind: string, child: number, position: number }): string => `family.json: children[${row.child}].${row.kind}[${row.position}]`
  const repeated = await stage.firstRepeatedId()
  if (repeated !== undefined) throw new ArchiveProblem(`${place(repeated)}: the id ${repeated.oldId} appears twice`)
  for (const { kind, field, link } of LINKS) {
    const broken = await stage.firstBrokenLink(kind, link)
    if (broken !== undefined) throw new ArchiveProblem(`${place(broken)}: ${field} names no record of the child in the archive`)
  }
  // No record links to a visit dated after the record's own date, as on POST.
  for (const { key, spec } of recordKinds) {
    if (!spec.writable.includes('visitId') || spec.dates.length === 0) continue
    const by = spec.visitBy ?? { field: spec.dates[0] }
    const later = await stage.firstLinkedAfter(key, VISIT, { column: spec.columns[by.field], whileUnset: by.ongoing === true ? latestAllowedDate() : null }, VISIT_DATE)
    if (later !== undefined) throw new ArchiveProblem(`${place(later)}: visitId names a visit after its ${by.field}`)
  }
}

/** Where the rows of family.json go as they are read: their files unpacked, their rows staged. */
function stagingSink (reading: Reading): DocumentSink {
  const { stage } = reading
  return {
    async child (at, child) {
      const avatar = child.avatarUrl === null ? null : await unpackAvatar(reading, entryOf(child.avatarUrl))
      await stage.add({
        kind: 'children',
        child: at,
        position: 0,
        oldId: child.id,
        row: {
          ...childColumns(child),
          avatar_name: avatar?.stored ?? null,
          avatar_size_bytes: avatar?.size ?? null
        }
      })
    },
    async record (at, key, position, row) {
      await stage.add({ kind: key, child: at, position, oldId: row.id as number, row: recordColumns(specs.get(key) as RegisteredKind, row) })
    },
    async attachment (at, position, row) {
      const file = await unpackAttachment(reading, entryOf(row.url))
      // An attachment whose file the export had listed as missing is left out.
      if (file === null) return
      await stage.add({
        kind: 'attachments',
        child: at,
        position,
        oldId: row.id,
        row: {
          ...linkColumns(row),
          file_name: row.fileName,
          stored_name: file.stored,
          content_type: file.contentType,
          size_bytes: file.size
        }
      })
    }
  }
}

/** Reads family.json as it streams, staging its rows and unpacking its files, then checks it against the manifest. */
async function readDocument (reading: Reading): Promise<FamilyDocument> {
  const { archive, manifest } = reading
  if (!archive.entries.has('family.json')) throw new ArchiveProblem('the archive has no family.json')
  if (archive.sizeOf('family.json') > MAX_DOCUMENT_BYTES) throw new ArchiveProblem(`family.json is larger than ${MAX_DOCUMENT_BYTES} bytes`)
  const { stream, digest } = await archive.read('family.json')
  const reader = new JsonReader(stream, DOCUMENT_LIMITS)
  let document: FamilyDocument
  try {
    document = await readFamilyDocument(reader, stagingSink(reading))
  } catch (error) {
    if (error instanceof JsonProblem) throw new ArchiveProblem(`family.json ${error.message}`)
    // The image pool's refusal is the importing user's, not the archive's.
    if (error instanceof QueueFull) throw error
    throw entryProblem('family.json', error)
  } finally {
    reader.close()
  }
  checkSum(manifest, 'family.json', digest())
  if (document.schemaVersion !== manifest.schemaVersion) throw new ArchiveProblem('family.json and manifest.json name different schema versions')
  await checkStagedRows(reading.stage)
  // The rest (FHIR bundles, files no row names) is only checked against the manifest.
  for (const name of archive.entries.keys()) {
    if (name === 'manifest.json' || name === 'family.json' || reading.used.has(name)) continue
    checkSum(manifest, name, await archive.digest(name))
  }
  return document
}

/** Writes the family and its staged rows in one transaction, new ids for old, links kept; the files take their names before the commit. */
async function writeFamily (reading: Reading, document: FamilyDocument, ownerId: number, actorId: number | null): Promise<{ family: Family, counts: ImportCounts }> {
  const { stage, staging } = reading
  const counts = { children: 0, ...Object.fromEntries(recordKinds.map(({ key }) => [key, 0])), attachments: 0, files: 0 } as ImportCounts
  const family = await stage.write(async tx => {
    await beginChange(tx, null, actorId)
    const { id: familyId } = await insertFamily(tx, document.familyName)
    await addMember(tx, familyId, ownerId, 'owner')
    counts.children = await writeStaged(tx, { kind: 'children', table: 'children', columns: CHILD_COLUMNS, links: [], constants: { family_id: familyId } })
    for (const table of recordTables(tx)) counts[table.kind as RecordKey] = await writeStaged(tx, table)
    const attachmentLinks = LINKS.filter(link => link.kind === 'attachments').map(({ link }) => link)
    counts.attachments = await writeStaged(tx, { kind: 'attachments', table: 'attachments', columns: ATTACHMENT_COLUMNS, links: attachmentLinks })
    counts.files = staging.files.length
    // The files take their stored names before the rows commit; if the commit fails they go again.
    await staging.store()
    return findFamily(tx, ownerId, familyId)
  })
  return { family: family as Family, counts }
}

/** Errors of the database that a row of the archive caused: a broken rule, a value out of range. */
function refusedRow (error: unknown): boolean {
  const code = (error as { code?: unknown }).code
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'))
}

/**
 * Imports a family archive as `GET /api/families/:id/export` writes it: a new
 * family owned by `ownerId` with every child, record, link and file. The
 * archive is read as it streams, never held whole: its manifest, then
 * family.json record by record, each checked by the rules of its POST and
 * staged in the database, its files unpacked and checked as their rows come;
 * avatars are re-encoded and attachments typed by their bytes, as uploads
 * are. One short transaction then writes the rows in the order of their ids
 * in the archive, so that every list reads back as it was, ties included. On
 * any failure nothing remains. `actorId` is the user the changes are recorded
 * for (null for the command line); `imageKey` names whose share of the image
 * pool the avatars take.
 */
export async function importArchive (
  sql: Sql, file: string, ownerId: number, actorId: number | null, options: ImportOptions, imageKey = `user:${ownerId}`
): Promise<{ family: Family, counts: ImportCounts }> {
  const { schemaVersion } = await exportSnapshot(sql)
  for (const dir of [options.uploadDir, options.avatarDir]) await mkdir(dir, { recursive: true })
  const archive = await ZipArchive.open(file, { maxEntries: MAX_ENTRIES, maxRatio: MAX_RATIO, allowed: isExportEntry })
  const staging = new Staging()
  let stage: RowStage | null = null
  try {
    const manifest = await readManifest(archive, schemaVersion)
    stage = await RowStage.open(sql)
    const reading: Reading = { archive, manifest, staging, stage, options, imageKey, used: new Set() }
    const document = await readDocument(reading)
    return await writeFamily(reading, document, ownerId, actorId)
  } catch (error) {
    await staging.discard()
    if (refusedRow(error)) throw new ArchiveProblem(`family.json holds a record the database refuses (${(error as Error).message})`)
    throw error
  } finally {
    archive.close()
    await stage?.close().catch(() => {})
  }
}
