import { Type, type TSchema } from '@sinclair/typebox'
import type { JsonReader } from '../../lib/import/json-reader'
import { ArchiveProblem } from '../../io/import/zip'
import { ATTACHMENT_TYPES } from '../../io/files/types'
import { Id, Name, Nullable, StrictObject } from '../../lib/schemas'
import { childFields, gestationIssue } from '../children'
import { recordKinds, type RecordKey, type RecordKind } from '../../kinds'
import { NO_VISIT, ruleIssues } from '../../kinds/rules'
import { checkValue } from './checks'
import { ALWAYS_LISTED } from './limits'

type Values = Record<string, unknown>

/** Bounds of the values of `family.json`: a record is read whole, nothing larger is. */
export const DOCUMENT_LIMITS = { maxText: 40_000, maxNumber: 40, maxDepth: 8, maxKeys: 100, maxValue: 256 * 1024 }

const Link = Type.Optional(Nullable(Id))

const ArchivedChild = Type.Object({
  id: Id,
  avatarUrl: Nullable(Type.String({ pattern: '^/avatars/[^/]+$' }))
})

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

/** A child's fields, checked as the body of its PUT is. */
const ChildBody = StrictObject(childFields)
const FamilyHead = Type.Object({ name: Name() })
const Text = Type.String({ maxLength: 300 })

export type ChildFields = Values & { id: number, avatarUrl: string | null, dateOfBirth: string }
export type AttachmentFields = Values & {
  id: number, visitId?: number | null, measurementId?: number | null, illnessId?: number | null, fileName: string, contentType: string, url: string
}

/** Where the rows of `family.json` go as they are read and checked, child by child, each list in its order. */
export interface DocumentSink {
  child: (at: number, child: ChildFields) => Promise<void>
  record: (at: number, key: RecordKey, position: number, row: Values) => Promise<void>
  attachment: (at: number, position: number, row: AttachmentFields) => Promise<void>
}

export interface FamilyDocument {
  schemaVersion: string
  familyName: string
}

const specs = new Map(recordKinds.map(({ key, spec }) => [key, spec]))
/** A record's id in the archive, and its parent's when it has one (a reading's illnessId). */
const archivedSchemas = new Map(recordKinds.map(({ key, spec }) => [key, Type.Object({ id: Id, ...(spec.parent === undefined ? {} : { [spec.parent.param]: Id }) })]))
const bodySchemas = new Map<RecordKey, TSchema>(recordKinds.map(({ key, spec }) => [key, StrictObject(spec.fields)]))
const LISTS = new Set<string>([...recordKinds.map(({ key }) => key), 'attachments'])
export { ALWAYS_LISTED }
/** The parts every child's part has. */
const REQUIRED = ['child', ...ALWAYS_LISTED, 'attachments']

/** A record's fields as its POST takes them: the writable ones that are set. */
function body (spec: RecordKind, row: Values): Values {
  const picked: Values = {}
  for (const field of spec.writable) {
    if (row[field] !== null && row[field] !== undefined) picked[field] = row[field]
  }
  return picked
}

function problemAt (where: string, issue: { path: string, message: string }): ArchiveProblem {
  return new ArchiveProblem(`${where}: ${issue.path.replace('/body/', '')} ${issue.message}`)
}

/** A child as the archive has it, checked by the rules of its PUT. */
function checkChild (value: unknown, where: string): ChildFields {
  const item = checkValue(ArchivedChild, value, where) as ChildFields
  const child = {
    name: item.name,
    dateOfBirth: item.dateOfBirth,
    sex: item.sex,
    gestationalAgeAtBirthWeeks: item.gestationalAgeAtBirthWeeks ?? null,
    gestationalAgeAtBirthDays: item.gestationalAgeAtBirthDays ?? null,
    ...(item.growthReference === undefined ? {} : { growthReference: item.growthReference }),
    scheduleId: item.scheduleId ?? null
  }
  checkValue(ChildBody, child, where)
  const gestation = gestationIssue(child as Parameters<typeof gestationIssue>[0])
  if (gestation !== null) throw problemAt(where, gestation)
  return item
}

/**
 * A record of a child, checked by the rules of its POST, but for those that
 * read what the child follows: a vaccine record keeps the series it was
 * exported with, which its child's schedule may no longer have (a record
 * keeps its series when the schedule changes).
 */
function checkRecord (key: RecordKey, value: unknown, birth: string, where: string): Values {
  const row = checkValue(archivedSchemas.get(key) as TSchema, value, where) as Values
  const spec = specs.get(key) as RecordKind
  const fields = body(spec, row)
  checkValue(bodySchemas.get(key) as TSchema, fields, where)
  const [issue] = ruleIssues(spec, fields, birth, NO_VISIT)
  if (issue !== undefined) throw problemAt(where, issue)
  return row
}

async function openList (reader: JsonReader, where: string): Promise<void> {
  if (!(await reader.openArray())) throw new ArchiveProblem(`${where} must be an array`)
}

/** A child's part of the document: the child first, then its lists, each record checked and handed on as it is read. */
async function readChild (reader: JsonReader, at: number, sink: DocumentSink): Promise<void> {
  const where = `family.json: children[${at}]`
  if (!(await reader.openObject())) throw new ArchiveProblem(`${where} must be an object`)
  const seen = new Set<string>()
  let birth: string | null = null
  for (let key = await reader.key(); key !== null; key = await reader.key()) {
    if (seen.has(key)) throw new ArchiveProblem(`${where}: ${key.slice(0, 100)} appears twice`)
    seen.add(key)
    if (key === 'child') {
      const child = checkChild(await reader.value(), `${where}.child`)
      birth = child.dateOfBirth
      await sink.child(at, child)
    } else if (LISTS.has(key)) {
      if (birth === null) throw new ArchiveProblem(`${where}: ${key} comes before child`)
      await openList(reader, `${where}.${key}`)
      for (let position = 0; await reader.item(); position += 1) {
        const place = `${where}.${key}[${position}]`
        const value = await reader.value()
        if (key === 'attachments') await sink.attachment(at, position, checkValue(ArchivedAttachment, value, place) as AttachmentFields)
        else await sink.record(at, key as RecordKey, position, checkRecord(key as RecordKey, value, birth, place))
      }
    } else if (key === 'growth' || key === 'growthUnavailable' || key === 'exportedAt' || key === 'schemaVersion') {
      // What the export derives or repeats is read over, within the limits.
      await reader.skip()
    } else {
      throw new ArchiveProblem(`${where}: ${key.slice(0, 100)} is not part of a child's record`)
    }
  }
  const missing = REQUIRED.find(key => !seen.has(key))
  if (missing !== undefined) throw new ArchiveProblem(`${where}: ${missing} is required`)
}

/**
 * Reads `family.json` as it streams, as `GET /api/families/:id/export`
 * writes it: the family's name, and every child with its records and
 * attachments, each checked by the rules of its POST and handed to `sink`
 * in the order read. A key that no export writes, or a value of the wrong
 * kind, is refused at once. The members of the exported family are read
 * over: they are not carried into the new family.
 */
export async function readFamilyDocument (reader: JsonReader, sink: DocumentSink): Promise<FamilyDocument> {
  if (!(await reader.openObject())) throw new ArchiveProblem('family.json must be an object')
  const seen = new Set<string>()
  const document: FamilyDocument = { schemaVersion: '', familyName: '' }
  for (let key = await reader.key(); key !== null; key = await reader.key()) {
    if (seen.has(key)) throw new ArchiveProblem(`family.json: ${key.slice(0, 100)} appears twice`)
    seen.add(key)
    if (key === 'schemaVersion') {
      document.schemaVersion = checkValue(Text, await reader.value(), 'family.json: schemaVersion')
    } else if (key === 'family') {
      document.familyName = checkValue(FamilyHead, await reader.value(), 'family.json: family').name
    } else if (key === 'children') {
      await openList(reader, 'family.json: children')
      for (let at = 0; await reader.item(); at += 1) await readChild(reader, at, sink)
    } else if (key === 'members') {
      await openList(reader, 'family.json: members')
      for (let at = 0; await reader.item(); at += 1) {
        if (await reader.kind() !== 'object') throw new ArchiveProblem(`family.json: members[${at}] must be an object`)
        await reader.skip()
      }
    } else if (key === 'exportedAt') {
      checkValue(Text, await reader.value(), 'family.json: exportedAt')
    } else {
      throw new ArchiveProblem(`family.json: ${key.slice(0, 100)} is not part of a family archive`)
    }
  }
  await reader.end()
  for (const key of ['schemaVersion', 'family', 'children']) {
    if (!seen.has(key)) throw new ArchiveProblem(`family.json: ${key} is required`)
  }
  return document
}
