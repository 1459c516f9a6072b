import type { Db } from '../db/client'
import type { Role } from '../lib/roles'

/** How long a ticket may be redeemed, in seconds. */
export const TICKET_TTL = 60

/** What a redeemed ticket stands for. */
export interface Redeemed {
  userId: number
  sessionId: number
  familyId: number
}

/**
 * Stores a new ticket's hash for a session and a family. Tickets expired for
 * more than an hour are deleted on the way, so that the table stays small.
 */
export async function createTicket (
  db: Db, ticket: { tokenHash: string, userId: number, sessionId: number, familyId: number }
): Promise<void> {
  await db`delete from event_tickets where expires_at < now() - interval '1 hour'`
  await db`
    insert into event_tickets (token_hash, user_id, session_id, family_id, expires_at)
    values (${ticket.tokenHash}, ${ticket.userId}, ${ticket.sessionId}, ${ticket.familyId},
            now() + make_interval(secs => ${TICKET_TTL}))
  `
}

/** Uses a ticket, once: undefined when it is unknown, used or expired. */
export async function redeemTicket (db: Db, tokenHash: string): Promise<Redeemed | undefined> {
  const [row] = await db<Redeemed[]>`
    update event_tickets set used_at = now()
    where token_hash = ${tokenHash} and used_at is null and expires_at > now()
    returning user_id as "userId", session_id as "sessionId", family_id as "familyId"
  `
  return row
}

/** A session that still lets its user in: not revoked, not expired, the user not disabled. */
export interface ActiveSession {
  id: number
  userId: number
  role: Role
  /** The limits of a personal access token's session, or null for a login's. */
  token: { scope: 'read' | 'write', familyId: number | null } | null
}

/** Those of the sessions that are still active, with their users. */
export async function sessionsStillActive (db: Db, sessionIds: number[]): Promise<ActiveSession[]> {
  if (sessionIds.length === 0) return []
  return db<ActiveSession[]>`
    select s.id, s.user_id as "userId", u.role,
      case when s.token_hash is null then null else json_build_object('scope', s.token_scope, 'familyId', s.token_family_id) end as token
    from sessions s
    join users u on u.id = s.user_id
    where s.id = any(${db.array(sessionIds)}::int[]) and s.revoked_at is null and s.expires_at > now() and not u.disabled
  `
}
