import { readFile } from 'node:fs/promises'
import path from 'node:path'
import type { Tx } from '../../db/client'
import { errors, invalidRequest } from '../../lib/errors'
import { bundleOf, patientSummary, type Attachment, type Bundle, type SummarySection } from '../../lib/fhir'
import { BUNDLE_KINDS, KINDS, SUMMARY_PARTS, type RecordKey, type RegisteredKind } from '../../kinds'
import { exportSnapshot } from '../../sql/export'
import { attachments, readChild, records, scorer, type ApiChild, type GrowthCharts } from '../export/child-records'

/** Which rows of a kind the sections hold, as the kind says (all, those of some types of medical event), or none. */
function keeps (sections: readonly SummarySection[], kind: RegisteredKind): ((row: Record<string, unknown>) => boolean) | null {
  const wanted = sections.flatMap(section => kind.summary.shared[section] ?? [])
  if (wanted.length === 0) return null
  if (wanted.includes(true)) return () => true
  return row => wanted.some(test => test !== true && test(row))
}

/** A child's records that a summary holds, read in one snapshot. */
export interface SummaryRecords {
  takenAt: string
  child: ApiChild
  kinds: Array<{ key: RecordKey, rows: object[] }>
  attachments: Attachment[]
}

/**
 * Reads, in the snapshot transaction `tx`, the child and the records of the
 * sections asked for, in the shapes and orders of their routes, each
 * measurement with its growth scores on the child's chart.
 */
export async function readSummaryRecords (tx: Tx, childId: number, sections: readonly SummarySection[], charts: GrowthCharts): Promise<SummaryRecords> {
  const { exportedAt } = await exportSnapshot(tx)
  const child = await readChild(tx, childId)
  if (child === undefined) throw new errors.notFound('Child')
  const score = scorer(charts, child)
  const kinds: SummaryRecords['kinds'] = []
  for (const kind of KINDS) {
    const keep = keeps(sections, kind)
    if (keep === null) continue
    const rows: object[] = []
    for await (const batch of records(tx, kind, childId)) {
      for (const row of batch) if (keep(row)) rows.push(kind.key === 'measurements' ? score(row) : row)
    }
    kinds.push({ key: kind.key, rows })
  }
  const files: Attachment[] = []
  if (sections.includes('attachments')) {
    for await (const batch of attachments(tx, childId)) files.push(...(batch as Attachment[]))
  }
  return { takenAt: exportedAt.toISOString(), child, kinds, attachments: files }
}

/**
 * The attachments with their bytes, read from UPLOAD_DIR, at most `maxBytes`
 * in all (checked before anything is read): more is a 400.
 */
export async function withFileData (files: Attachment[], uploadDir: string, maxBytes: number): Promise<Attachment[]> {
  const total = files.reduce((sum, file) => sum + file.sizeBytes, 0)
  if (total > maxBytes) {
    throw invalidRequest([{
      path: '/body/sections',
      message: `the child's attachments hold ${total} bytes, more than the ${maxBytes} a link may carry: share without "attachments"`
    }])
  }
  const read: Attachment[] = []
  for (const file of files) {
    let data: Buffer
    try {
      data = await readFile(path.join(uploadDir, path.basename(file.url)))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
      throw new errors.conflict('An attachment was deleted while the link was made: try again')
    }
    read.push({ ...file, data: data.toString('base64') })
  }
  return read
}

export interface SummaryOptions {
  /** The summary's own identifier, a UUID. */
  id: string
  title: string
  author: string | null
  sections: readonly SummarySection[]
}

/**
 * The summary a share carries: an International Patient Summary style FHIR
 * R4 document of the records read, with the IPS sections they fill. The
 * child's gestational age at birth goes with its growth.
 */
export function summaryBundle (records: SummaryRecords, options: SummaryOptions): Bundle {
  const child = options.sections.includes('growth')
    ? records.child
    : { ...records.child, gestationalAgeAtBirthWeeks: null, gestationalAgeAtBirthDays: null }
  const byKey = new Map(records.kinds.map(kind => [kind.key, kind.rows]))
  const kinds = BUNDLE_KINDS.map(kind => ({ mapping: kind.fhir, rows: byKey.get(kind.key) ?? [] }))
  const collection = bundleOf(child, kinds, records.attachments, { timestamp: records.takenAt })
  return patientSummary(collection, { ...options, timestamp: records.takenAt, parts: SUMMARY_PARTS })
}
