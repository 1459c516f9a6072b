import type { TObject, TProperties } from '@sinclair/typebox'
import type { ChangeKind, RecordTable } from '../lib/kinds'
import type { RuleSpec } from './rules'

type Values = Record<string, unknown>

/** Allowed sort fields: the API's camelCase name and its column. */
export type SortFields = Record<string, string>

/** A kind's table and its columns, the API's camelCase name mapped to the column's snake_case one. */
export interface RecordTableSpec {
  table: RecordTable
  /** Every column the API answers, `id`, `childId` and the timestamps included. */
  columns: Record<string, string>
  /** The columns a client writes. */
  writable: string[]
  /**
   * The column a list is read by: `child_id` (the default) for a child's
   * records, the parent's for records listed under another record (a
   * temperature reading's `illness_id`).
   */
  listedBy?: string
}

/**
 * A kind of a child's records apart from how it is served: its names, its
 * answer's schema, its table and columns (derived from the schema), the
 * fields a client writes and their rules, its default order and the fields
 * its answers derive. The routes add their paths and descriptions; the
 * archive import, the exports and the change log read only this.
 */
export interface RecordKind<Kind extends ChangeKind = ChangeKind, Key extends string = string, Table extends RecordTable = RecordTable>
  extends RecordTableSpec, RuleSpec {
  /** The kind, as the change log and the changes feed name it: `measurement`. */
  kind: Kind
  /** The kind's list in an export or an archive: `measurements`. */
  key: Key
  table: Table
  /** The answer's schema, named by its `$id`. */
  schema: TObject
  /** Body fields of POST and PUT, without `childId`. */
  fields: TProperties
  sorts: SortFields
  defaultSort: string
  toResponse?: (row: Values) => Values
  /** The same derived fields as SQL expressions over the row `r`, for answers the database writes as JSON. */
  derivedSql?: Record<string, string>
  /** A row as the change log keeps it (the table's columns) in the shape the kind's GET answers. */
  present: (row: Values) => Values
}
