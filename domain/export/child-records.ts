import { openObject, writeBundle } from '../../lib/export/bundle'
import type { Output } from '../../lib/export/output'
import { apiRow } from '../../lib/export/rows'
import { bundleOf, streamedBundle, type Attachment, type Bundle, type BundleOptions, type FhirChild } from '../../lib/fhir'
import { childGrowth } from '../../lib/growth/child'
import type { GrowthTables } from '../../lib/growth/tables'
import type { Db, Tx } from '../../db/client'
import { findChild } from '../../sql/children'
import { attachmentBatches, attachmentTargets, growthBatches, recordBatches, type Snapshot } from '../../sql/export'
import { orderBy } from '../../sql/list'
import { KINDS, recordKinds, type RecordKey, type RecordKind } from '../../kinds'

/** What every export document starts with. */
export interface ExportHead {
  exportedAt: string
  schemaVersion: string
}

export type ChildCounts = Record<RecordKey | 'attachments', number>

export type ApiChild = FhirChild

export function exportHead (snapshot: Snapshot): ExportHead {
  return { exportedAt: snapshot.exportedAt.toISOString(), schemaVersion: snapshot.schemaVersion }
}

/** A child as its route answers it, or undefined when it is gone. */
export async function readChild (db: Db, childId: number): Promise<ApiChild | undefined> {
  const child = await findChild(db, childId)
  return child === undefined ? undefined : apiRow(child)
}

/** A child's records of one kind, in batches, in the order and shape of their list. */
function records (tx: Tx, spec: RecordKind, childId: number): AsyncIterable<Record<string, unknown>[]> {
  const order = orderBy(tx, spec.defaultSort, spec.sorts)
  const respond = spec.toResponse ?? (row => row)
  return (async function * () {
    for await (const batch of recordBatches(tx, spec, childId, order)) yield batch.map(row => apiRow(respond(row)))
  })()
}

async function * attachments (tx: Tx, childId: number): AsyncIterable<object[]> {
  for await (const batch of attachmentBatches(tx, childId)) yield batch.map(apiRow)
}

/** A child's records in memory, by the kinds' keys; a kind left out has none. */
export type ChildRecords = { child: FhirChild, attachments: Attachment[] } & Partial<Record<RecordKey, object[]>>

/** A child's whole record as a FHIR R4 collection Bundle, from records in memory in the shapes of the routes. */
export function childBundle (records: ChildRecords, options: BundleOptions): Bundle {
  const kinds = KINDS.map(kind => ({ mapping: kind.fhir, rows: records[kind.key] ?? [] }))
  return bundleOf(records.child, kinds, records.attachments, options)
}

/**
 * A child's FHIR bundle, written batch by batch as its records are read, in
 * the shapes and default orders of the child's routes.
 */
export async function writeChildBundle (out: Output, tx: Tx, child: ApiChild, timestamp: string): Promise<void> {
  const kinds = KINDS.map(kind => ({ mapping: kind.fhir, rows: () => records(tx, kind, child.id) }))
  // The rows come in the API's shapes, which are the FHIR mapping's input types.
  const files = () => attachments(tx, child.id) as AsyncIterable<Attachment[]>
  const bundle = streamedBundle(child, await attachmentTargets(tx, child.id), kinds, files, { timestamp })
  await writeBundle(out, bundle.head, bundle.entries)
}

/** The growth document as its route answers it, its points scored batch by batch. */
async function writeGrowth (out: Output, tx: Tx, child: ApiChild, tables: GrowthTables | null): Promise<void> {
  if (tables === null) return out.write('null')
  const { points: _points, ...document } = childGrowth(tables, child, [])
  await out.write(`${openObject(document)}"points":`)
  await out.array((async function * () {
    for await (const batch of growthBatches(tx, child.id)) yield childGrowth(tables, child, batch).points
  })())
  await out.write('}')
}

/**
 * A child's whole record as one JSON document: every list complete, in the
 * shapes and default orders of the child's routes, written batch by batch.
 */
export async function writeChildDocument (out: Output, tx: Tx, head: ExportHead, child: ApiChild, tables: GrowthTables | null): Promise<ChildCounts> {
  await out.write(`${openObject(head)}"child":${JSON.stringify(child)}`)
  const counts: Partial<ChildCounts> = {}
  for (const { key, spec } of recordKinds) {
    await out.write(`,"${key}":`)
    counts[key] = await out.array(records(tx, spec, child.id))
  }
  await out.write(',"attachments":')
  counts.attachments = await out.array(attachments(tx, child.id))
  await out.write(',"growth":')
  await writeGrowth(out, tx, child, tables)
  await out.write('}')
  return counts as ChildCounts
}
