import type { Db } from '../db/client'
import { readPage, type Page, type PageRequest } from './list'

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

/**
 * Ends the user's sessions but one, as a password change does. Personal
 * access tokens go on: they end when deleted, when they expire or when the
 * account is disabled.
 */
export async function revokeUserSessions (db: Db, userId: number, exceptSessionId: number | null = null): Promise<void> {
  await db`
    update sessions set revoked_at = now()
    where user_id = ${userId} and revoked_at is null and id is distinct from ${exceptSessionId} and token_hash is null
  `
}

/** Ends every session of a user being disabled, personal access tokens included, for good. */
export async function revokeAccountSessions (db: Db, userId: number): Promise<void> {
  await db`update sessions set revoked_at = now() where user_id = ${userId} and revoked_at is null`
}

export async function revokeOwnSession (db: Db, userId: number, sessionId: number): Promise<boolean> {
  const rows = await db`
    update sessions set revoked_at = coalesce(revoked_at, now())
    where id = ${sessionId} and user_id = ${userId} and token_hash is null
    returning id
  `
  return rows.length > 0
}

export async function activeSessions (db: Db, userId: number, page: PageRequest): Promise<Page<Session>> {
  return await readPage<Session>(db, {
    ...page,
    select: db`id, created_at as "createdAt", last_used_at as "lastUsedAt", user_agent as "userAgent"`,
    from: db`from sessions where user_id = ${userId} and revoked_at is null and expires_at > now() and token_hash is null`,
    order: db`order by id`
  })
}

/** A personal access token as its owner sees it: never the token itself. */
export interface PersonalToken {
  id: number
  name: string
  scope: 'read' | 'write'
  familyId: number | null
  createdAt: Date
  expiresAt: Date | null
  lastUsedAt: Date | null
}

/** What a personal access token stands for: its session, its user, and its limits. */
export interface TokenIdentity {
  sessionId: number
  userId: number
  scope: 'read' | 'write'
  familyId: number | null
}

const tokenColumns = (db: Db) => db`
  id, token_name as name, token_scope as scope, token_family_id as "familyId", created_at as "createdAt",
  case when expires_at = 'infinity' then null else expires_at end as "expiresAt",
  case when last_used_at = created_at then null else last_used_at end as "lastUsedAt"
`

/**
 * The session of a personal access token by its hash, whatever its state:
 * the checks of every request decide whether it is still active. Its last
 * use is written at most once a minute, so that a token's requests do not
 * each write a row.
 */
export async function identifyToken (db: Db, tokenHash: string): Promise<TokenIdentity | undefined> {
  const [row] = await db<TokenIdentity[]>`
    with found as (
      select id, user_id, token_scope, token_family_id, created_at, last_used_at, revoked_at, expires_at
      from sessions
      where token_hash = ${tokenHash}
    ),
    touched as (
      update sessions s set last_used_at = now()
      from found f
      where s.id = f.id and f.revoked_at is null and f.expires_at > now()
        and (f.last_used_at = f.created_at or f.last_used_at < now() - interval '1 minute')
      returning s.id
    )
    select id as "sessionId", user_id as "userId", token_scope as scope, token_family_id as "familyId"
    from found
  `
  return row
}

/**
 * Locks the user's row for the rest of the transaction and answers how many
 * personal access tokens the user has, so that two creates at once cannot
 * pass the limit together.
 */
export async function lockTokenCount (db: Db, userId: number): Promise<number> {
  await db`select id from users where id = ${userId} for no key update`
  const [row] = await db<{ n: number }[]>`
    select count(*)::int as n from sessions where user_id = ${userId} and token_hash is not null and revoked_at is null
  `
  return row.n
}

export async function insertPersonalToken (
  db: Db, token: { userId: number, name: string, scope: 'read' | 'write', familyId: number | null, tokenHash: string, expiresAt: string | null }
): Promise<PersonalToken> {
  const [row] = await db<PersonalToken[]>`
    insert into sessions (user_id, token_hash, token_name, token_scope, token_family_id, expires_at)
    values (${token.userId}, ${token.tokenHash}, ${token.name}, ${token.scope}, ${token.familyId},
            coalesce(${token.expiresAt}::timestamptz, 'infinity'))
    returning ${tokenColumns(db)}
  `
  return row
}

/** The user's personal access tokens, expired ones included, oldest first. */
export async function listPersonalTokens (db: Db, userId: number, page: PageRequest): Promise<Page<PersonalToken>> {
  return await readPage<PersonalToken>(db, {
    ...page,
    select: tokenColumns(db),
    from: db`from sessions where user_id = ${userId} and token_hash is not null and revoked_at is null`,
    order: db`order by id`
  })
}

/** Deletes one of the user's personal access tokens, and so its session; false when the user has no token of that id. */
export async function deletePersonalToken (db: Db, userId: number, id: number): Promise<boolean> {
  const rows = await db`delete from sessions where id = ${id} and user_id = ${userId} and token_hash is not null returning id`
  return rows.length > 0
}
