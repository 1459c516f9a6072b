import { openObject, writeBundle } from '../../lib/export/bundle'
import type { Output } from '../../lib/export/output'
import { apiRow } from '../../lib/export/rows'
import { bundleOf, streamedBundle, type Attachment, type Bundle, type BundleOptions, type FhirChild } from '../../lib/fhir'
import type { CdcTables } from '../../lib/growth/cdc'
import { needsWho, type ChartOptions, type GrowthReference } from '../../lib/growth/charts'
import { childGrowth } from '../../lib/growth/child'
import { growthPoint, type GrowthMeasurement } from '../../lib/growth/point'
import type { GrowthTables } from '../../lib/growth/tables'
import { GrowthTrendStream, type GrowthAlert } from '../../lib/growth/trends'
import type { Db, Tx } from '../../db/client'
import { findChild } from '../../sql/children'
import { attachmentBatches, attachmentTargets, growthBatches, recordBatches, type Snapshot } from '../../sql/export'
import { orderBy } from '../../sql/list'
import { BUNDLE_KINDS, recordKinds, type RecordKey, type RecordKind } from '../../kinds'

/** What every export document starts with. */
export interface ExportHead {
  exportedAt: string
  schemaVersion: string
}

export type ChildCounts = Record<RecordKey | 'attachments', number>

export type ApiChild = FhirChild & { growthReference: string }

/** The growth charts the service has: WHO's tables once installed, CDC's charts always. */
export interface GrowthCharts {
  who: GrowthTables | null
  cdc: CdcTables
}

interface Scoring { tables: GrowthTables | null, options: ChartOptions }

/** What scores a child's growth on its chart; null when the chart needs WHO's tables and they are missing. */
function scoringOf (charts: GrowthCharts, child: ApiChild): Scoring | null {
  const reference = child.growthReference as GrowthReference
  if (needsWho(reference) && charts.who === null) return null
  return { tables: charts.who, options: { reference, cdc: charts.cdc } }
}

/**
 * A measurement in the shape of its route with its growth scores on the
 * child's chart (those of the growth route's point), as the FHIR mapping
 * takes it; the row as it is when the service lacks the chart.
 */
export function scorer (charts: GrowthCharts, child: ApiChild): (row: Record<string, unknown>) => Record<string, unknown> {
  const scoring = scoringOf(charts, child)
  if (scoring === null) return row => row
  return row => ({ ...row, growth: growthPoint(scoring.tables, child, row as unknown as GrowthMeasurement, scoring.options) })
}

export function exportHead (snapshot: Snapshot): ExportHead {
  return { exportedAt: snapshot.exportedAt.toISOString(), schemaVersion: snapshot.schemaVersion }
}

/** A child as its route answers it, or undefined when it is gone. */
export async function readChild (db: Db, childId: number): Promise<ApiChild | undefined> {
  const child = await findChild(db, childId)
  return child === undefined ? undefined : apiRow(child)
}

/** A child's records of one kind, in batches, in the order and shape of their list. */
export function records (tx: Tx, spec: RecordKind, childId: number): AsyncIterable<Record<string, unknown>[]> {
  const order = orderBy(tx, spec.defaultSort, spec.sorts)
  const respond = spec.toResponse ?? (row => row)
  return (async function * () {
    for await (const batch of recordBatches(tx, spec, childId, order)) yield batch.map(row => apiRow(respond(row)))
  })()
}

export async function * attachments (tx: Tx, childId: number): AsyncIterable<object[]> {
  for await (const batch of attachmentBatches(tx, childId)) yield batch.map(apiRow)
}

/** A child's records in memory, by the kinds' keys; a kind left out has none. */
export type ChildRecords = { child: FhirChild, attachments: Attachment[] } & Partial<Record<RecordKey, object[]>>

/**
 * A child's whole record as a FHIR R4 collection Bundle, from records in
 * memory in the shapes of the routes; a measurement given with its `growth`
 * scores (those of the growth route's point) has its percentiles too.
 */
export function childBundle (records: ChildRecords, options: BundleOptions): Bundle {
  const kinds = BUNDLE_KINDS.map(kind => ({ mapping: kind.fhir, rows: records[kind.key] ?? [] }))
  return bundleOf(records.child, kinds, records.attachments, options)
}

/**
 * A child's FHIR bundle, written batch by batch as its records are read, in
 * the shapes and default orders of the child's routes.
 */
export async function writeChildBundle (out: Output, tx: Tx, child: ApiChild, timestamp: string, charts: GrowthCharts): Promise<void> {
  // A measurement comes with its growth scores, on the child's chart, when the service has the chart.
  const score = scorer(charts, child)
  const scored = (rows: AsyncIterable<Record<string, unknown>[]>) => (async function * () {
    for await (const batch of rows) yield batch.map(score)
  })()
  const kinds = BUNDLE_KINDS.map(kind => ({
    mapping: kind.fhir,
    rows: () => kind.key === 'measurements' ? scored(records(tx, kind, child.id)) : records(tx, kind, child.id)
  }))
  // The rows come in the API's shapes, which are the FHIR mapping's input types.
  const files = () => attachments(tx, child.id) as AsyncIterable<Attachment[]>
  const bundle = streamedBundle(child, await attachmentTargets(tx, child.id), kinds, files, { timestamp })
  await writeBundle(out, bundle.head, bundle.entries)
}

/** Why a child's export has no growth: its chart needs WHO's tables, and they are missing. */
export const GROWTH_UNAVAILABLE = 'The WHO growth reference tables are not installed (see GROWTH_DATA_DIR)'

/**
 * The growth document as its route answers it on the child's chart, its
 * points scored batch by batch, then why it is null when it is.
 */
async function writeGrowth (out: Output, tx: Tx, child: ApiChild, charts: GrowthCharts): Promise<void> {
  const scoring = scoringOf(charts, child)
  if (scoring === null) return out.write(`null,"growthUnavailable":${JSON.stringify(GROWTH_UNAVAILABLE)}`)
  const { tables, options } = scoring
  const { points: _points, alerts: _alerts, ...document } = childGrowth(tables, child, [], options)
  await out.write(`${openObject(document)}"points":`)
  const trends = new GrowthTrendStream()
  const alerts: GrowthAlert[] = []
  await out.array((async function * () {
    for await (const batch of growthBatches(tx, child.id)) {
      const part = trends.add(batch.map(measurement => growthPoint(tables, child, measurement, options)))
      alerts.push(...part.alerts)
      yield part.points
    }
  })())
  await out.write(`,"alerts":${JSON.stringify(alerts)}},"growthUnavailable":null`)
}

/**
 * A child's whole record as one JSON document: every list complete, in the
 * shapes and default orders of the child's routes, written batch by batch.
 */
export async function writeChildDocument (out: Output, tx: Tx, head: ExportHead, child: ApiChild, charts: GrowthCharts): Promise<ChildCounts> {
  await out.write(`${openObject(head)}"child":${JSON.stringify(child)}`)
  const counts: Partial<ChildCounts> = {}
  for (const { key, spec } of recordKinds) {
    await out.write(`,"${key}":`)
    counts[key] = await out.array(records(tx, spec, child.id))
  }
  await out.write(',"attachments":')
  counts.attachments = await out.array(attachments(tx, child.id))
  await out.write(',"growth":')
  await writeGrowth(out, tx, child, charts)
  await out.write('}')
  return counts as ChildCounts
}
