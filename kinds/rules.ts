// The rules between a record and its child that a schema cannot state:
// dates within the child's life and not in the future (a visit's up to 730
// days ahead), a link to a visit of the same child on or before the record's
// date, and the kind's own checks.

type Values = Record<string, unknown>

import type { Issue } from '../lib/errors'

export type { Issue } from '../lib/errors'

/** What the rules read of a kind of record: its date fields, its date-and-time fields, its own checks. */
export interface RuleSpec {
  /** Date fields that must lie between the child's birth and tomorrow. */
  dates: string[]
  /**
   * Timestamp fields (RFC 3339) that must lie between the start of the
   * child's date of birth in the earliest time zone (00:00 at UTC+14) and a
   * day after now. The first is the main date of a kind without `dates`:
   * `from` and `to` filter on its date in UTC.
   */
  timestamps?: string[]
  /**
   * The record's own date, which a visit it links to may not be after: the
   * field, and for a record that lasts (an illness, by its end), today while
   * the field is unset. Default: the first of `dates`.
   */
  visitBy?: { field: string, ongoing?: boolean }
  /** Date fields that may lie this many days ahead of the latest date of `dates` (a visit is an appointment too). */
  ahead?: Record<string, number>
  /** Rules between fields of the body, as validation issues. */
  check?: (body: Values) => Issue[]
  /**
   * Rules between the body and what the child follows (its vaccine
   * schedule), which need the child read apart: run only for a body they
   * apply to, and such a create is not one statement.
   */
  childRules?: { applies: (body: Values) => boolean, check: (body: Values, child: ChildFacts) => Issue[] }
}

/** What the rules read of a child besides its date of birth. */
export interface ChildFacts {
  scheduleId: string | null
}

/** The latest allowed date, and the time it stays so: the next midnight UTC. */
let latest = { value: '', until: 0 }

/** Tomorrow in UTC: record dates may be a day ahead, for time zones east of the server. */
export function latestAllowedDate (): string {
  const now = Date.now()
  if (now >= latest.until || now < latest.until - 86400000) {
    const midnight = now - (now % 86400000) + 86400000
    latest = { value: new Date(now + 86400000).toISOString().slice(0, 10), until: midnight }
  }
  return latest.value
}

/** The latest date allowed `days` ahead of the latest date of a record. */
export function latestAheadDate (days: number): string {
  return new Date(Date.parse(`${latestAllowedDate()}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10)
}

/**
 * The visit a body links to, as the database found it: whether it is a visit
 * of the record's child (true when none is linked), and its date (null when
 * none is linked or it is not known yet).
 */
export interface LinkedVisit {
  ofChild: boolean
  date: string | null
}

/** No visit linked, or the link not checked yet: only the rules that need no database. */
export const NO_VISIT: LinkedVisit = { ofChild: true, date: null }

const NOT_A_VISIT_OF_THE_CHILD: Issue = { path: '/body/visitId', message: 'must be a visit of the same child' }

/**
 * The rules between records, given the child's date of birth (null: not
 * known yet, only the rules that need no database) and the visit a body
 * links to; with the child's facts, the rules that read them too. The CSV
 * import checks its rows with them too.
 */
export function ruleIssues (spec: RuleSpec, body: Values, birth: string | null, visit: LinkedVisit, child?: ChildFacts): Issue[] {
  const issues: Issue[] = [...(spec.check?.(body) ?? [])]
  if (child !== undefined && spec.childRules?.applies(body) === true) issues.push(...spec.childRules.check(body, child))
  const lastDate = latestAllowedDate()
  for (const field of spec.dates) {
    const value = body[field]
    if (typeof value !== 'string') continue
    if (birth !== null && value < birth) issues.push({ path: `/body/${field}`, message: `must not be before the child's date of birth (${birth})` })
    const ahead = spec.ahead?.[field]
    if (ahead === undefined && value > lastDate) issues.push({ path: `/body/${field}`, message: 'must not be in the future' })
    if (ahead !== undefined && value > latestAheadDate(ahead)) issues.push({ path: `/body/${field}`, message: `must not be more than ${ahead} days ahead` })
  }
  for (const field of spec.timestamps ?? []) {
    const value = body[field]
    if (typeof value !== 'string') continue
    const at = Date.parse(value)
    if (Number.isNaN(at)) {
      issues.push({ path: `/body/${field}`, message: 'must be a date and time (RFC 3339, e.g. 2024-05-17T08:30:00Z)' })
      continue
    }
    if (birth !== null && at < earliestInstantOf(birth)) issues.push({ path: `/body/${field}`, message: `must not be before the child's date of birth (${birth})` })
    if (at > Date.now() + DAY_MS) issues.push({ path: `/body/${field}`, message: 'must not be more than a day in the future' })
  }
  if (!visit.ofChild) issues.push(NOT_A_VISIT_OF_THE_CHILD)
  const own = ownDate(spec, body)
  if (visit.date !== null && own !== null && visit.date > own.date) {
    const before = own.ongoing ? `today while ${own.field} is not set` : own.field
    issues.push({ path: '/body/visitId', message: `must be a visit on or before ${before} (the visit is on ${visit.date})` })
  }
  return issues
}

/** The record's own date that a visit it links to may not be after, or null when it has none. */
export function ownDate (spec: RuleSpec, body: Values): { field: string, date: string, ongoing: boolean } | null {
  const by = spec.visitBy ?? (spec.dates[0] === undefined ? undefined : { field: spec.dates[0] })
  if (by === undefined) return null
  const value = body[by.field]
  if (typeof value === 'string') return { field: by.field, date: value, ongoing: false }
  return by.ongoing === true ? { field: by.field, date: latestAllowedDate(), ongoing: true } : null
}

const DAY_MS = 86400000
/** UTC+14, the earliest time zone: a day starts there 14 hours before it starts in UTC. */
const EARLIEST_OFFSET_MS = 14 * 3600000

/** The first instant of a date anywhere on Earth. */
function earliestInstantOf (date: string): number {
  return Date.parse(`${date}T00:00:00Z`) - EARLIEST_OFFSET_MS
}
