import type { ChangeKind, RecordTable } from '../lib/kinds'
import type { FamilyRole } from '../lib/roles'
import type { ClockOf } from '../sql/access'

// What a route asks of the family scope, and what the scope resolved.

/** Where the id of the target is read: a path parameter, a body field or a query parameter. */
export type Locator = `params.${string}` | `body.${string}` | `query.${string}`

export type Target =
  | { family: Locator }
  | { child: Locator }
  | { record: RecordTable, at: Locator }
  | { history: ChangeKind, at: Locator }

export interface ScopeOptions {
  target: Target
  /** The least role that may pass: by default `viewer` for reads and `member` for writes. */
  role?: FamilyRole
  /** A path parameter naming a user: a caller acting on themselves needs only to be a member (leaving a family). */
  self?: Locator
  /** What the target is called in a 404. */
  name?: string
  /** When the locator is empty: skip the check (`skip`), or use the caller's only family (`only-family`). */
  whenAbsent?: 'skip' | 'only-family'
  /**
   * A read's ETag, and a 304 when If-None-Match names it: the target's own
   * version (`version`), or a tag of the URL and the clock of the child's or
   * the family's changes (`child`, `family`).
   */
  etag?: 'version' | ClockOf
  /**
   * The answer also depends on the day (it counts days from today, UTC): the
   * day is part of its clock ETag, so that an answer of yesterday is not kept.
   */
  daily?: boolean
  /** A write of the target itself honours If-Match with its version: 412 when it differs. */
  ifMatch?: boolean
  /**
   * The answer is the same for every caller allowed to read it, so it is kept
   * in the cache of answers under its URL and ETag, and served from there
   * while the ETag is current. Needs `etag`.
   */
  cache?: boolean
  /**
   * A create whose access is decided in its insert's own statement
   * (sql/access.ts, createChecked): authentication reads only the token, and
   * the handler passes what the statement found to `decideCreate`. A request
   * of the route that cannot be one statement calls `completeAccess` first.
   */
  oneStatement?: boolean
}

/** What the scope resolved, for the handler to trust. */
export interface Scope {
  familyId: number
  childId: number | null
  /** The child's date of birth, for the rules on record dates. */
  childBirth: string | null
  role: FamilyRole
  /** The target's version when the scope was decided. */
  version: number | null
  /** The version an If-Match header asked for: the write must find it unchanged, or it is a 412. */
  expectedVersion: number | null
}
