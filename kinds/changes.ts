import { presentOther, type OtherKind } from '../lib/kinds'
import { KINDS, recordKind, type RecordKindName, type RecordKindTable } from './index'

type Row = Record<string, unknown>

/** The kinds that change, as the changes feed names them. */
export type ChangeKind = OtherKind | RecordKindName
/** Tables of records that belong to a child (a temperature reading through its illness too). */
export type RecordTable = RecordKindTable | 'attachments'

/** The places of the kinds that are not a child's records in the feed's enum; each kind of record states its own. */
const OTHER_ORDER: Record<OtherKind, number> = { family: 1, member: 2, child: 3, attachment: 8 }

/**
 * The kinds that change, in the order the kinds came to the service, which
 * the changes feed's enum keeps for its clients: attachments came after the
 * first four kinds of records.
 */
export const CHANGE_KINDS: ChangeKind[] = [
  ...Object.entries(OTHER_ORDER).map(([kind, order]) => ({ kind: kind as ChangeKind, order })),
  ...KINDS.map(spec => ({ kind: spec.kind, order: spec.changeOrder }))
].sort((a, b) => a.order - b.order).map(({ kind }) => kind)

/** A row as the change log keeps it (the table's columns) in the shape the kind's GET answers. */
export function present (kind: ChangeKind, row: Row): Row {
  return recordKind(kind)?.present(row) ?? presentOther(kind as OtherKind, row)
}

/**
 * A position in a family's changes: the transaction that wrote a change and
 * its number, the order the feed reads them in. The epoch changes when a
 * restore replaces the family's data, so a cursor of the old data is refused
 * rather than silently skipping what the restore changed.
 */
export interface Position {
  xid: number
  seq: number
}

export interface Cursor extends Position {
  familyId: number
  epoch: string
}

/** Before any change. */
export const START: Position = { xid: 0, seq: 0 }

const NUMBER = '(0|[1-9]\\d{0,15})'
/** `family.epoch.xid.seq`; cursors written before changes carried their transaction have no xid, which is then 0. */
const CURSOR = new RegExp(`^([1-9]\\d{0,9})\\.([0-9a-f]{1,32})(?:\\.${NUMBER})?\\.${NUMBER}$`)

export function encodeCursor (cursor: Cursor): string {
  return Buffer.from(`${cursor.familyId}.${cursor.epoch}.${cursor.xid}.${cursor.seq}`).toString('base64url')
}

/** The cursor a string names, or null when it is not one. */
export function decodeCursor (text: string): Cursor | null {
  if (!/^[A-Za-z0-9_-]{1,100}$/.test(text)) return null
  const match = CURSOR.exec(Buffer.from(text, 'base64url').toString('utf8'))
  if (match === null) return null
  const familyId = Number(match[1])
  const xid = Number(match[3] ?? 0)
  const seq = Number(match[4])
  if (familyId > 2147483647 || !Number.isSafeInteger(seq) || !Number.isSafeInteger(xid)) return null
  return { familyId, epoch: match[2], xid, seq }
}

/** Whether a change comes after a position. */
export function isAfter (change: Position, position: Position): boolean {
  return change.xid > position.xid || (change.xid === position.xid && change.seq > position.seq)
}

/** A change as the change log keeps it. */
export interface StoredChange extends Position {
  familyId: number
  kind: ChangeKind
  recordId: number
  childId: number | null
  op: 'created' | 'updated' | 'deleted'
  version: number
  userId: number | null
  at: Date
  record: Record<string, unknown> | null
}

/** A change as the API answers it. */
export interface Change {
  cursor: string
  kind: ChangeKind
  id: number
  childId: number | null
  op: 'created' | 'updated' | 'deleted'
  version: number
  at: Date
  userId: number | null
  record: Record<string, unknown> | null
}

/**
 * The change in the API's shape. A family's record carries the reader's role
 * in it, like the family's GET.
 */
export function presentChange (change: StoredChange, epoch: string, readerRole: string | null = null): Change {
  let record = change.record === null ? null : present(change.kind, change.record)
  if (record !== null && change.kind === 'family') record = { ...record, role: readerRole }
  return {
    cursor: encodeCursor({ familyId: change.familyId, epoch, xid: change.xid, seq: change.seq }),
    kind: change.kind,
    id: change.recordId,
    childId: change.childId,
    op: change.op,
    version: change.version,
    at: change.at,
    userId: change.userId,
    record
  }
}

/** Fields of a history entry that say nothing of the change itself. */
const BOOKKEEPING = new Set(['id', 'version', 'createdAt', 'updatedAt'])

function comparable (value: unknown): string {
  return JSON.stringify(value instanceof Date ? value.toISOString() : value ?? null)
}

/**
 * The fields a change altered, each with its value before and after: every
 * field of a created record (from null), every field of a deleted one (to
 * null), and only the fields that differ for an update.
 */
export function changedFields (
  kind: ChangeKind, before: Record<string, unknown> | null, after: Record<string, unknown> | null
): Record<string, { from: unknown, to: unknown }> {
  const old = before === null ? {} : present(kind, before)
  const now = after === null ? {} : present(kind, after)
  const fields: Record<string, { from: unknown, to: unknown }> = {}
  for (const name of new Set([...Object.keys(old), ...Object.keys(now)])) {
    if (BOOKKEEPING.has(name)) continue
    const from = before === null ? null : old[name] ?? null
    const to = after === null ? null : now[name] ?? null
    if (comparable(from) !== comparable(to)) fields[name] = { from, to }
  }
  return fields
}
