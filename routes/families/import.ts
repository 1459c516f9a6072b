import path from 'node:path'
import { mkdir, rename } from 'node:fs/promises'
import { Type, type TSchema } from '@sinclair/typebox'
import type { ValidateFunction } from 'ajv'
import type { Sql } from '../../db/client'
import { isServableName, storedName, temporaryName } from '../../lib/files/names'
import { removeQuietly } from '../../lib/files/store'
import { ATTACHMENT_TYPES, AVATAR_TYPES, detectType } from '../../lib/files/types'
import { ArchiveProblem, ZipArchive, type EntryDigest } from '../../lib/import/zip'
import { Id, Nullable, StrictObject } from '../../lib/schemas'
import { buildValidator } from '../../plugins/validation'
import { beginChange } from '../../sql/changes'
import { exportSnapshot } from '../../sql/export'
import { addMember, findFamily, insertFamily, type Family } from '../../sql/families'
import { insertRows, newIds, type ImportTable } from '../../sql/import'
import { gestationIssue } from '../children/rules'
import { ReplaceChildBody } from '../children/schemas'
import { recordKinds, type RecordKey } from '../export/kinds'
import { ruleIssues, type RecordSpec } from '../records'

export { ArchiveProblem }

/** The limits of an archive, as the contract sets them. */
export const MAX_ENTRIES = 100_000
export const MAX_RATIO = 4
const MAX_MANIFEST_BYTES = 64 * 1024 * 1024
const MAX_DOCUMENT_BYTES = 256 * 1024 * 1024

export type ImportCounts = Record<RecordKey | 'children' | 'attachments' | 'files', number>

export interface ImportOptions {
  uploadDir: string
  avatarDir: string
}

const FHIR_ENTRY = /^fhir\/[1-9]\d{0,9}\.json$/
const SCHEMA_VERSION = /^\d{8}-\d{6}-[a-z0-9-]+\.sql$/

/** The names an export writes: its two documents, a FHIR bundle per child, and the stored files. */
function isExportEntry (name: string): boolean {
  return name === 'family.json' || name === 'manifest.json' || FHIR_ENTRY.test(name) ||
    (name.startsWith('files/') && isServableName(name.slice('files/'.length)))
}

const Sha256 = Type.String({ pattern: '^[0-9a-f]{64}$' })

const Manifest = Type.Object({
  schemaVersion: Type.String({ pattern: SCHEMA_VERSION.source }),
  files: Type.Array(Type.Object({ path: Type.String(), size: Type.Integer({ minimum: 0 }), sha256: Sha256 }), { maxItems: MAX_ENTRIES }),
  missingFiles: Type.Optional(Type.Array(Type.String(), { maxItems: MAX_ENTRIES }))
})

const Link = Type.Optional(Nullable(Id))
const Row = Type.Object({ id: Id })

const ArchivedAttachment = Type.Object({
  id: Id,
  visitId: Link,
  measurementId: Link,
  illnessId: Link,
  fileName: Type.String({ minLength: 1, maxLength: 255 }),
  contentType: Type.String({ enum: [...ATTACHMENT_TYPES] }),
  sizeBytes: Type.Integer({ minimum: 0 }),
  url: Type.String({ pattern: '^/uploads/[^/]+$' })
})

const ArchivedChild = Type.Object({
  child: Type.Object({
    id: Id,
    avatarUrl: Nullable(Type.String({ pattern: '^/avatars/[^/]+$' }))
  }),
  measurements: Type.Array(Row),
  visits: Type.Array(Row),
  medicalEvents: Type.Array(Row),
  illnesses: Type.Array(Row),
  // Archives written before temperature readings existed have none.
  temperatures: Type.Optional(Type.Array(Type.Object({ id: Id, illnessId: Id }))),
  attachments: Type.Array(ArchivedAttachment)
})

const FamilyDocument = Type.Object({
  schemaVersion: Type.String(),
  family: Type.Object({ name: Type.String() }),
  children: Type.Array(ArchivedChild)
})


type Values = Record<string, unknown>

interface ArchivedRow extends Values { id: number }
interface ArchivedFamily {
  schemaVersion: string
  family: { name: string }
  children: Array<{
    child: Values & { id: number, avatarUrl: string | null }
    attachments: Array<ArchivedRow & { visitId?: number | null, measurementId?: number | null, illnessId?: number | null, fileName: string, contentType: string, sizeBytes: number, url: string }>
  } & Record<Exclude<RecordKey, 'temperatures'>, ArchivedRow[]> & { temperatures?: ArchivedRow[] }>
}

const compile = buildValidator()
const validators = new Map<TSchema, ValidateFunction>()

/** Checks a value against a schema; the first issue is the archive's problem, named by where it is. */
function check (schema: TSchema, value: unknown, where: string): void {
  let validate = validators.get(schema)
  if (validate === undefined) {
    validate = compile({ schema, httpPart: 'body' } as never) as ValidateFunction
    validators.set(schema, validate)
  }
  if (validate(value)) return
  const [issue] = validate.errors ?? []
  const at = issue?.instancePath === undefined || issue.instancePath === '' ? '' : ` ${issue.instancePath.slice(1).replaceAll('/', '.')}`
  throw new ArchiveProblem(`${where}:${at} ${issue?.message ?? 'is not valid'}`)
}

function parseJson (text: string, name: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw new ArchiveProblem(`${name} is not valid JSON`)
  }
}

/** A file the archive holds for a row, unpacked into a temporary file of its target folder until it is stored. */
interface Unpacked {
  entry: string
  dir: string
  temporary: string
  stored: string
  size: number
}

/**
 * What an import leaves on disk until its rows commit: temporary files, then
 * stored ones. Whatever is here when the import fails is removed; a process
 * killed meanwhile leaves files that the orphan sweep removes.
 */
class Staging {
  readonly files: Unpacked[] = []
  private readonly renamed: string[] = []

  add (file: Unpacked): void {
    this.files.push(file)
  }

  async store (): Promise<void> {
    for (const file of this.files) {
      const target = path.join(file.dir, file.stored)
      await rename(file.temporary, target)
      this.renamed.push(target)
    }
  }

  async discard (): Promise<void> {
    await Promise.all([...this.files.map(file => removeQuietly(file.temporary)), ...this.renamed.map(removeQuietly)])
  }
}

interface Manifested {
  schemaVersion: string
  sums: Map<string, { size: number, sha256: string }>
  missing: Set<string>
}

async function readManifest (archive: ZipArchive, ourVersion: string): Promise<Manifested> {
  if (!archive.entries.has('manifest.json')) throw new ArchiveProblem('the archive has no manifest.json')
  const manifest = parseJson((await archive.text('manifest.json', MAX_MANIFEST_BYTES)).text, 'manifest.json') as Values
  check(Manifest, manifest, 'manifest.json')
  const { schemaVersion, files, missingFiles = [] } = manifest as { schemaVersion: string, files: Array<{ path: string, size: number, sha256: string }>, missingFiles?: string[] }
  if (schemaVersion > ourVersion) {
    throw new ArchiveProblem(`the archive is of schema version ${schemaVersion}, newer than this service's ${ourVersion}: update the service first`)
  }
  const sums = new Map(files.map(file => [file.path, { size: file.size, sha256: file.sha256 }]))
  for (const name of archive.entries.keys()) {
    if (name !== 'manifest.json' && !sums.has(name)) throw new ArchiveProblem(`the entry ${name} is not in the manifest`)
  }
  for (const name of sums.keys()) {
    if (!archive.entries.has(name)) throw new ArchiveProblem(`${name} is in the manifest but not in the archive`)
  }
  return { schemaVersion, sums, missing: new Set(missingFiles) }
}

function checkSum (manifest: Manifested, name: string, found: EntryDigest): void {
  const expected = manifest.sums.get(name)
  if (expected === undefined || expected.sha256 !== found.sha256 || expected.size !== found.size) {
    throw new ArchiveProblem(`the SHA-256 of ${name} does not match the manifest`)
  }
}

const recordSpecs = new Map(recordKinds.map(({ key, spec }) => [key, spec]))
const bodySchemas = new Map(recordKinds.map(({ key, spec }) => [key, StrictObject(spec.fields)]))

/** A record's fields as its POST takes them: the writable ones that are set. */
function body (spec: RecordSpec, row: Values): Values {
  const picked: Values = {}
  for (const field of spec.writable) {
    if (row[field] !== null && row[field] !== undefined) picked[field] = row[field]
  }
  return picked
}

/** Checks every record of the document with the rules of its POST, and every link within its child. */
function checkDocument (document: ArchivedFamily): void {
  check(Type.String({ minLength: 1, maxLength: 200 }), document.family.name, 'family.json: family.name')
  for (const [index, item] of document.children.entries()) {
    const where = `family.json: children[${index}]`
    const child = {
      name: item.child.name,
      dateOfBirth: item.child.dateOfBirth,
      sex: item.child.sex,
      gestationalAgeAtBirthWeeks: item.child.gestationalAgeAtBirthWeeks ?? null,
      gestationalAgeAtBirthDays: item.child.gestationalAgeAtBirthDays ?? null
    }
    check(ReplaceChildBody, child, `${where}.child`)
    const gestation = gestationIssue(child as Parameters<typeof gestationIssue>[0])
    if (gestation !== null) throw new ArchiveProblem(`${where}.child: ${gestation.path.replace('/body/', '')} ${gestation.message}`)
    const ids: Partial<Record<RecordKey, Set<number>>> = {}
    for (const { key, spec } of recordKinds) {
      const seen = new Set<number>()
      for (const [at, row] of (item[key] ?? []).entries()) {
        const fields = body(spec, row)
        check(bodySchemas.get(key) as TSchema, fields, `${where}.${key}[${at}]`)
        const [issue] = ruleIssues(spec, fields, child.dateOfBirth as string, true)
        if (issue !== undefined) throw new ArchiveProblem(`${where}.${key}[${at}]: ${issue.path.replace('/body/', '')} ${issue.message}`)
        if (seen.has(row.id)) throw new ArchiveProblem(`${where}.${key}[${at}]: the id ${row.id} appears twice`)
        seen.add(row.id)
      }
      ids[key] = seen
    }
    const linked = (key: RecordKey, id: unknown, at: string, field: string): void => {
      if (id === null || id === undefined) return
      if (!(ids[key] as Set<number>).has(id as number)) throw new ArchiveProblem(`${at}: ${field} names no record of the child in the archive`)
    }
    for (const key of ['measurements', 'medicalEvents', 'illnesses'] as const) {
      for (const [at, row] of item[key].entries()) linked('visits', row.visitId, `${where}.${key}[${at}]`, 'visitId')
    }
    for (const [at, row] of (item.temperatures ?? []).entries()) linked('illnesses', row.illnessId, `${where}.temperatures[${at}]`, 'illnessId')
    for (const [at, row] of item.attachments.entries()) {
      const place = `${where}.attachments[${at}]`
      linked('visits', row.visitId, place, 'visitId')
      linked('measurements', row.measurementId, place, 'measurementId')
      linked('illnesses', row.illnessId, place, 'illnessId')
    }
  }
}

/** The archive entry of a stored file named by a URL (`/uploads/<name>`, `/avatars/<name>`). */
function entryOf (url: string): string {
  return `files/${url.slice(url.lastIndexOf('/') + 1)}`
}

/**
 * Unpacks a file of a row into a temporary file of its folder, checking its
 * SHA-256, its size and that its bytes are of an accepted type. Answers null
 * when the export had left the file out (it was missing on disk there).
 */
async function unpack (
  archive: ZipArchive, manifest: Manifested, staging: Staging, entry: string, dir: string, types: readonly string[], expectedType?: string
): Promise<Unpacked | null> {
  if (!archive.entries.has(entry)) {
    if (manifest.missing.has(entry)) return null
    throw new ArchiveProblem(`family.json names ${entry}, which the archive does not hold`)
  }
  const temporary = path.join(dir, temporaryName())
  const file: Unpacked = { entry, dir, temporary, stored: '', size: 0 }
  staging.add(file)
  const found = await archive.extract(entry, temporary)
  checkSum(manifest, entry, found)
  const type = await detectType(temporary, expectedType === undefined ? types : [expectedType])
  if (type === undefined) throw new ArchiveProblem(`the content of ${entry} is not ${expectedType ?? `one of ${types.join(', ')}`}`)
  file.stored = storedName(type.ext)
  file.size = found.size
  return file
}

/**
 * Rows in the order they were first created, so that their new ids follow it
 * and every list that breaks ties by id reads back in the same order.
 */
function inCreationOrder<T> (items: T[], rowOf: (item: T) => Values = item => item as Values): T[] {
  const key = (item: T): [string, number] => {
    const row = rowOf(item)
    return [typeof row.createdAt === 'string' ? row.createdAt : '', Number(row.id)]
  }
  return [...items].sort((a, b) => {
    const [at, id] = key(a)
    const [bt, bid] = key(b)
    return at < bt ? -1 : at > bt ? 1 : id - bid
  })
}

interface Plan {
  name: string
  children: Array<{
    id: number
    child: Values
    avatar: Unpacked | null
    records: Record<RecordKey, ArchivedRow[]>
    attachments: Array<{ row: ArchivedFamily['children'][number]['attachments'][number], file: Unpacked }>
  }>
}

/** Reads and checks the whole archive, unpacking its files, before anything is written. */
async function readArchive (archive: ZipArchive, ourVersion: string, staging: Staging, options: ImportOptions): Promise<Plan> {
  const manifest = await readManifest(archive, ourVersion)
  if (!archive.entries.has('family.json')) throw new ArchiveProblem('the archive has no family.json')
  const read = await archive.text('family.json', MAX_DOCUMENT_BYTES)
  checkSum(manifest, 'family.json', read)
  const document = parseJson(read.text, 'family.json') as ArchivedFamily
  check(FamilyDocument, document, 'family.json')
  if (document.schemaVersion !== manifest.schemaVersion) throw new ArchiveProblem('family.json and manifest.json name different schema versions')
  checkDocument(document)

  const used = new Set<string>()
  const plan: Plan = { name: document.family.name, children: [] }
  for (const item of document.children) {
    let avatar: Unpacked | null = null
    if (item.child.avatarUrl !== null) {
      const entry = entryOf(item.child.avatarUrl)
      avatar = await unpack(archive, manifest, staging, entry, options.avatarDir, AVATAR_TYPES)
      used.add(entry)
    }
    const attachments: Plan['children'][number]['attachments'] = []
    for (const row of item.attachments) {
      const entry = entryOf(row.url)
      const file = await unpack(archive, manifest, staging, entry, options.uploadDir, ATTACHMENT_TYPES, row.contentType)
      used.add(entry)
      if (file !== null) attachments.push({ row, file })
    }
    const records = Object.fromEntries(recordKinds.map(({ key }) => [key, inCreationOrder(item[key] ?? [])])) as Record<RecordKey, ArchivedRow[]>
    plan.children.push({ id: item.child.id, child: item.child, avatar, records, attachments: inCreationOrder(attachments, ({ row }) => row) })
  }
  // The rest (FHIR bundles, files no row names) is only checked against the manifest.
  for (const name of archive.entries.keys()) {
    if (name === 'manifest.json' || name === 'family.json' || used.has(name)) continue
    checkSum(manifest, name, await archive.digest(name))
  }
  return plan
}

const TABLES: Record<RecordKey, ImportTable> = { visits: 'visits', measurements: 'measurements', medicalEvents: 'medical_events', illnesses: 'illnesses', temperatures: 'temperatures' }

/** The highest temperature reading of each illness of a child, by the illness's id in the archive. */
function highestReadings (readings: ArchivedRow[]): Map<number, number> {
  const highest = new Map<number, number>()
  for (const { illnessId, temperatureC } of readings as Array<ArchivedRow & { illnessId: number, temperatureC: number }>) {
    highest.set(illnessId, Math.max(highest.get(illnessId) ?? -Infinity, temperatureC))
  }
  return highest
}

/** Writes the family and its rows in one transaction, new ids for old, links kept. */
async function writePlan (sql: Sql, plan: Plan, ownerId: number, actorId: number | null, staging: Staging): Promise<{ family: Family, counts: ImportCounts }> {
  const counts: ImportCounts = { children: plan.children.length, measurements: 0, visits: 0, medicalEvents: 0, illnesses: 0, temperatures: 0, attachments: 0, files: 0 }
  const family = await sql.begin(async tx => {
    await beginChange(tx, null, actorId)
    const { id: familyId } = await insertFamily(tx, plan.name)
    await addMember(tx, familyId, ownerId, 'owner')
    const childIds = await newIds(tx, 'children', plan.children.length)
    const childColumns = ['id', 'family_id', 'name', 'date_of_birth', 'sex', 'gestational_age_weeks', 'gestational_age_days', 'avatar_name', 'avatar_size_bytes']
    await insertRows(tx, 'children', childColumns, plan.children.map((item, index) => ({
      id: childIds[index],
      family_id: familyId,
      name: item.child.name,
      date_of_birth: item.child.dateOfBirth,
      sex: item.child.sex,
      gestational_age_weeks: item.child.gestationalAgeAtBirthWeeks ?? null,
      gestational_age_days: item.child.gestationalAgeAtBirthDays ?? null,
      avatar_name: item.avatar?.stored ?? null,
      avatar_size_bytes: item.avatar?.size ?? null
    })))
    // Visits first: the other records link to them; temperature readings after their illnesses.
    const order: RecordKey[] = ['visits', 'measurements', 'medicalEvents', 'illnesses', 'temperatures']
    const rows: Record<RecordKey, Values[]> = { visits: [], measurements: [], medicalEvents: [], illnesses: [], temperatures: [] }
    // An illness is written with its highest reading, so that its readings, written next, leave it as it is: one change a row.
    const highest = plan.children.map(item => highestReadings(item.records.temperatures))
    const maps = plan.children.map(() => ({} as Record<RecordKey, Map<number, number>>))
    for (const key of order) {
      const spec = recordSpecs.get(key) as RecordSpec
      const all = plan.children.flatMap((item, index) => item.records[key].map(row => ({ row, index })))
      const ids = await newIds(tx, TABLES[key], all.length)
      for (const map of maps) map[key] = new Map()
      const extra = key === 'illnesses' ? ['max_temperature_c'] : spec.parent !== undefined ? [spec.parent.column] : []
      const columns = ['id', 'child_id', ...extra, ...spec.writable.map(field => spec.columns[field])]
      const values = all.map(({ row, index }, at) => {
        maps[index][key].set(row.id, ids[at])
        const out: Values = { id: ids[at], child_id: childIds[index] }
        for (const field of spec.writable) out[spec.columns[field]] = row[field] ?? null
        if (out.visit_id !== undefined && out.visit_id !== null) out.visit_id = maps[index].visits.get(out.visit_id as number)
        if (key === 'illnesses') out.max_temperature_c = highest[index].get(row.id) ?? null
        if (key === 'temperatures') out.illness_id = maps[index].illnesses.get(row.illnessId as number)
        return out
      })
      rows[key] = values
      await insertRows(tx, TABLES[key], columns, values)
      counts[key] = values.length
    }
    const attachments = plan.children.flatMap((item, index) => item.attachments.map(({ row, file }) => {
      const map = maps[index]
      const link = (key: RecordKey, id: number | null | undefined): number | null => id === null || id === undefined ? null : map[key].get(id) ?? null
      return {
        child_id: childIds[index],
        visit_id: link('visits', row.visitId),
        measurement_id: link('measurements', row.measurementId),
        illness_id: link('illnesses', row.illnessId),
        file_name: row.fileName,
        stored_name: file.stored,
        content_type: row.contentType,
        size_bytes: file.size
      }
    }))
    await insertRows(tx, 'attachments', ['child_id', 'visit_id', 'measurement_id', 'illness_id', 'file_name', 'stored_name', 'content_type', 'size_bytes'], attachments)
    counts.attachments = attachments.length
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
 * family owned by `ownerId` with every child, record, link and file. The whole
 * archive is read and checked, and its files unpacked, before one transaction
 * writes the rows; on any failure nothing remains. `actorId` is the user the
 * changes are recorded for (null for the command line).
 */
export async function importArchive (
  sql: Sql, file: string, ownerId: number, actorId: number | null, options: ImportOptions
): Promise<{ family: Family, counts: ImportCounts }> {
  const { schemaVersion } = await exportSnapshot(sql)
  for (const dir of [options.uploadDir, options.avatarDir]) await mkdir(dir, { recursive: true })
  const archive = await ZipArchive.open(file, { maxEntries: MAX_ENTRIES, maxRatio: MAX_RATIO, allowed: isExportEntry })
  const staging = new Staging()
  try {
    const plan = await readArchive(archive, schemaVersion, staging, options)
    return await writePlan(sql, plan, ownerId, actorId, staging)
  } catch (error) {
    await staging.discard()
    if (refusedRow(error)) throw new ArchiveProblem(`family.json holds a record the database refuses (${(error as Error).message})`)
    throw error
  } finally {
    archive.close()
  }
}
