import type { Db } from '../db/client'
import { pageTotal } from './list'

/** A session is one login; its refresh tokens form a chain, each knowing the token it replaced. */
export interface Session {
  id: number
  createdAt: Date
  lastUsedAt: Date
  userAgent: string | null
}

export interface StoredRefreshToken {
  id: number
  sessionId: number
  userId: number
  /** Seconds since the token was rotated, or null while it is the session's current one. */
  rotatedSecondsAgo: number | null
  sessionRevoked: boolean
  sessionExpired: boolean
}

export async function createSession (db: Db, userId: number, userAgent: string | null, ttlSeconds: number): Promise<number> {
  const [row] = await db`
    insert into sessions (user_id, user_agent, expires_at)
    values (${userId}, ${userAgent}, now() + make_interval(secs => ${ttlSeconds}))
    returning id
  `
  return row.id
}

export async function insertRefreshToken (
  db: Db,
  token: { sessionId: number, userId: number, tokenHash: string, replacesId: number | null, ttlSeconds: number }
): Promise<void> {
  await db`
    insert into refresh_tokens (session_id, user_id, token_hash, replaces_id, expires_at)
    values (${token.sessionId}, ${token.userId}, ${token.tokenHash}, ${token.replacesId},
            now() + make_interval(secs => ${token.ttlSeconds}))
  `
  await db`
    update sessions
    set last_used_at = now(), expires_at = now() + make_interval(secs => ${token.ttlSeconds})
    where id = ${token.sessionId}
  `
}

/** Locks the token's row, so that two refreshes with one token run one after the other. */
export async function lockRefreshToken (db: Db, tokenHash: string): Promise<StoredRefreshToken | undefined> {
  const [row] = await db<StoredRefreshToken[]>`
    select
      t.id, t.session_id as "sessionId", t.user_id as "userId", extract(epoch from now() - t.rotated_at)::float8 as "rotatedSecondsAgo",
      s.revoked_at is not null as "sessionRevoked",
      s.expires_at <= now() or t.expires_at <= now() as "sessionExpired"
    from refresh_tokens t
    join sessions s on s.id = t.session_id
    where t.token_hash = ${tokenHash}
    for update of t
  `
  return row
}

export async function markRotated (db: Db, id: number): Promise<void> {
  await db`update refresh_tokens set rotated_at = now() where id = ${id}`
}

export async function revokeSession (db: Db, sessionId: number): Promise<void> {
  await db`update sessions set revoked_at = now() where id = ${sessionId} and revoked_at is null`
}

export async function revokeUserSessions (db: Db, userId: number, exceptSessionId: number | null = null): Promise<void> {
  await db`
    update sessions set revoked_at = now()
    where user_id = ${userId} and revoked_at is null and id is distinct from ${exceptSessionId}
  `
}

export async function revokeOwnSession (db: Db, userId: number, sessionId: number): Promise<boolean> {
  const rows = await db`
    update sessions set revoked_at = coalesce(revoked_at, now())
    where id = ${sessionId} and user_id = ${userId}
    returning id
  `
  return rows.length > 0
}

export async function activeSessions (db: Db, userId: number, limit: number, offset: number): Promise<{ rows: Session[], total: number }> {
  const rows = await db<(Session & { total: number })[]>`
    select
      id, created_at as "createdAt", last_used_at as "lastUsedAt", user_agent as "userAgent",
      (select count(*) from sessions where user_id = ${userId} and revoked_at is null and expires_at > now()) as total
    from sessions
    where user_id = ${userId} and revoked_at is null and expires_at > now()
    order by id
    limit ${limit} offset ${offset}
  `
  const total = await pageTotal(rows, offset, () => db`
    select count(*) as n from sessions where user_id = ${userId} and revoked_at is null and expires_at > now()
  `)
  return { rows, total }
}
