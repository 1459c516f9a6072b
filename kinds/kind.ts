import type { TObject, TProperties, TSchema } from '@sinclair/typebox'
import { ofTypes, type FhirMapping, type Resource, type SummaryPart, type SummarySection } from '../lib/fhir'
import type { RuleSpec } from './rules'

type Values = Record<string, unknown>

/** Allowed sort fields: the API's camelCase name and its column. */
export type SortFields = Record<string, string>

/** A kind's table and its columns, the API's camelCase name mapped to the column's snake_case one. */
export interface RecordTableSpec {
  table: string
  /** Every column the API answers, `id`, `childId` and the timestamps included. */
  columns: Record<string, string>
  /** The fields a client writes: the keys of the body's fields. */
  writable: string[]
  /**
   * The record it is listed under instead of its child, by the column that
   * links them (a temperature reading's `illness_id`); a list is read by
   * `child_id` without it.
   */
  parent?: { column: string }
}

/**
 * The record a kind is listed and created under, instead of its child (a
 * temperature reading under its illness): the kind is then reached as
 * `/api/{parent path}/:{param}/{segment}` and `/api/{kind}/:id`, within the
 * family scope of the parent's child. A parent may derive values from its
 * records (an illness's highest reading): every write of a record locks its
 * parent's row first.
 */
export interface ParentSpec {
  /** The parent's kind: its path, its names and its table. */
  kind: RecordKind
  /** The path parameter of the parent's id, e.g. `illnessId`. */
  param: string
  /** The column that links a record to its parent. */
  column: string
  /** The URL segment of the list under the parent, when not the kind's path (a course's `doses`). */
  segment?: string
}

/**
 * A query parameter that narrows a list: rows whose column equals its value
 * or, with `isNull`, rows whose column is null (true) or not (false) for
 * each value.
 */
export interface RecordFilter {
  values: readonly string[]
  column: string
  isNull?: Record<string, boolean>
}

/**
 * A kind of a child's records: its names, its answer's schema, its table and
 * columns (derived from the schema), the fields a client writes and their
 * rules, its default order, the fields its answers derive, and how its routes
 * are named and described. The record routes, the archive import, the exports
 * and the change log read only this.
 */
export interface RecordKind<Kind extends string = string, Key extends string = string, Table extends string = string>
  extends RecordTableSpec, RuleSpec {
  /** The kind, as the change log and the changes feed name it: `measurement`. */
  kind: Kind
  /** The kind's list in an export or an archive: `measurements`. */
  key: Key
  /**
   * The kind's place in the changes feed's enum of kinds (kinds/changes.ts),
   * which clients read by position: the order the kinds came to the service.
   * A new kind takes the next number.
   */
  changeOrder: number
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
  /** The URL segment, e.g. `medical-events`. */
  path: string
  /** The names of the kind's operations and schemas: `MedicalEvent`, `MedicalEvents`. */
  singular: string
  plural: string
  /** The kind in a sentence, when its singular is not: `temperature reading`. */
  noun?: string
  /** Listed and created under this record instead of under the child. */
  parent?: ParentSpec
  /**
   * What the OpenAPI document says of the list and the create, besides their
   * summaries; of its list in a child's export, when not `every {noun},
   * newest first` (or oldest, by its default sort); and of its change in the
   * changes feed.
   */
  descriptions?: { list?: string, create?: string, exported?: string, change?: string }
  /** Query parameters that narrow a list. */
  filters?: Record<string, RecordFilter>
  /**
   * The field by which records of other kinds link to this one (a visit's
   * `visitId`): their own date may not come before this record's date.
   */
  linkedAs?: string
  /** Body fields of POST only. */
  createFields?: TProperties
  /** The answer to a create, when it holds more than the record. */
  createSchema?: TSchema
  /**
   * A record of another kind that a create may carry in a field (a visit's
   * measurement): written in the same transaction from its fields and
   * `link`, which reads the record just created, and answered in that field.
   */
  createsWith?: { field: string, kind: RecordKind, link: (created: Values) => Values }
  /**
   * Columns an archive import writes that no field gives, as SQL over the
   * staged row `r` and the other staged rows `import_rows` (an illness's
   * highest reading, from its readings staged beside it).
   */
  archiveDerived?: Record<string, string>
  /** How its records become FHIR resources in a child's bundle. */
  fhir: FhirMapping
  /** What a shared summary (an International Patient Summary) makes of its records. */
  summary: KindSummary
}

/**
 * Where a kind's records go in a shared summary: the sections of a share
 * that hold them (all of them, or the rows a test keeps: a medical event by
 * its type), and the IPS sections its resources go in.
 */
export interface KindSummary {
  shared: Partial<Record<SummarySection, true | ((row: Values) => boolean)>>
  parts: SummaryPart[]
}

/**
 * The summary of a kind whose records a share's section holds all of, and
 * whose resources of one type go in one IPS section.
 */
export function summaryIn (section: SummarySection, part: Omit<SummaryPart, 'holds'>, resourceType: Resource['resourceType']): KindSummary {
  return { shared: { [section]: true }, parts: [{ ...part, holds: ofTypes(resourceType) }] }
}

/** A kind's name in a sentence: `medical event`, `temperature reading`. */
export function nounOf (kind: { noun?: string, singular: string }): string {
  return kind.noun ?? kind.singular.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase()
}

/**
 * A kind's names, from what the change log calls it, its list's name, its
 * table and its place in the changes feed: its path is its list's name in
 * kebab case (`medical-events`), its operations' names the two names in
 * Pascal case (`MedicalEvent`, `MedicalEvents`).
 */
export function kindNames<Kind extends string, Key extends string, Table extends string> (
  kind: Kind, key: Key, table: Table, changeOrder: number
): Pick<RecordKind<Kind, Key, Table>, 'kind' | 'key' | 'table' | 'changeOrder' | 'path' | 'singular' | 'plural'> {
  const pascal = (name: string): string => name.charAt(0).toUpperCase() + name.slice(1)
  return {
    kind,
    key,
    changeOrder,
    table,
    path: key.replace(/[A-Z]/g, letter => `-${letter.toLowerCase()}`),
    singular: pascal(kind),
    plural: pascal(key)
  }
}
