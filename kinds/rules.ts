// The rules between a record and its child that a schema cannot state:
// dates within the child's life and not in the future, a link to a visit of
// the same child, and the kind's own checks.

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

const NOT_A_VISIT_OF_THE_CHILD: Issue = { path: '/body/visitId', message: 'must be a visit of the same child' }

/**
 * The rules between records, given the child's date of birth (null: not
 * known yet, only the rules that need no database) and whether a linked
 * visit is the child's; with the child's facts, the rules that read them
 * too. The CSV import checks its rows with them too.
 */
export function ruleIssues (spec: RuleSpec, body: Values, birth: string | null, visitOk: boolean, child?: ChildFacts): Issue[] {
  const issues: Issue[] = [...(spec.check?.(body) ?? [])]
  if (child !== undefined && spec.childRules?.applies(body) === true) issues.push(...spec.childRules.check(body, child))
  const lastDate = latestAllowedDate()
  for (const field of spec.dates) {
    const value = body[field]
    if (typeof value !== 'string') continue
    if (birth !== null && value < birth) issues.push({ path: `/body/${field}`, message: `must not be before the child's date of birth (${birth})` })
    if (value > lastDate) issues.push({ path: `/body/${field}`, message: 'must not be in the future' })
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
  if (!visitOk) issues.push(NOT_A_VISIT_OF_THE_CHILD)
  return issues
}

const DAY_MS = 86400000
/** UTC+14, the earliest time zone: a day starts there 14 hours before it starts in UTC. */
const EARLIEST_OFFSET_MS = 14 * 3600000

/** The first instant of a date anywhere on Earth. */
function earliestInstantOf (date: string): number {
  return Date.parse(`${date}T00:00:00Z`) - EARLIEST_OFFSET_MS
}
