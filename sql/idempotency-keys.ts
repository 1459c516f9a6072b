import type { Db } from '../db/client'

/** A request with a key, as its row identifies it. */
export interface KeyedRequest {
  userId: number
  key: string
  method: string
  path: string
  fingerprint: string
}

/** A key's row as a repeat sees it. */
export interface KeyRow {
  method: string
  path: string
  fingerprint: string
  state: 'running' | 'done'
  status: number | null
  answer: Buffer | null
  /** The family the request acted in, as its family scope decided; null for a route without one. */
  familyId: number | null
  /** Running, but not touched for longer than the bound: its request died. */
  stale: boolean
}

const keyColumns = (db: Db, staleAfter: number) => db`
  method, path, fingerprint, state, status, answer, family_id as "familyId",
  state = 'running' and touched_at < now() - make_interval(secs => ${staleAfter}) as stale
`

/**
 * Claims a key for a request, in a statement that commits on its own: a new
 * key, an expired one, or one whose request died (running and not touched for
 * `staleAfter` seconds) with the same request. Answers the claim that names
 * this run, or null when the key is someone else's to answer.
 */
export async function claimKey (db: Db, request: KeyedRequest, lifetime: number, staleAfter: number): Promise<string | null> {
  const { userId, key, method, path, fingerprint } = request
  const [row] = await db<{ claim: string }[]>`
    insert into idempotency_keys as k (user_id, key, method, path, fingerprint, claim, state, expires_at)
    values (${userId}, ${key}, ${method}, ${path}, ${fingerprint}, gen_random_uuid(), 'running', now() + make_interval(secs => ${lifetime}))
    on conflict (user_id, key) do update set
      method = excluded.method, path = excluded.path, fingerprint = excluded.fingerprint, claim = excluded.claim,
      state = 'running', status = null, answer = null, created_at = now(), touched_at = now(), expires_at = excluded.expires_at
    where k.expires_at <= now()
      or (k.state = 'running' and k.touched_at < now() - make_interval(secs => ${staleAfter})
          and k.method = excluded.method and k.path = excluded.path and k.fingerprint = excluded.fingerprint)
    returning claim::text
  `
  return row?.claim ?? null
}

/** A key's row, unless it has expired. */
export async function findKey (db: Db, userId: number, key: string, staleAfter: number): Promise<KeyRow | undefined> {
  const [row] = await db<KeyRow[]>`
    select ${keyColumns(db, staleAfter)}
    from idempotency_keys
    where user_id = ${userId} and key = ${key} and expires_at > now()
  `
  return row
}

/**
 * Inside a transaction: takes the key for the rest of it, unless another
 * transaction holds it (then null), and answers its row, if any. For requests
 * run inside another's transaction (a batch's), whose key is kept with it.
 */
export async function lockKey (db: Db, userId: number, key: string, staleAfter: number): Promise<{ row: KeyRow | undefined } | null> {
  const [found] = await db<Array<{ locked: boolean, row: Record<string, unknown> | null }>>`
    select pg_try_advisory_xact_lock(${userId}::integer, hashtext(${key})) as locked,
      (select row_to_json(r) from (
        select ${keyColumns(db, staleAfter)} from idempotency_keys
        where user_id = ${userId} and key = ${key} and expires_at > now()
      ) r) as row
  `
  if (!found.locked) return null
  const row = found.row
  if (row === null) return { row: undefined }
  const answer = typeof row.answer === 'string' ? Buffer.from(row.answer.slice(2), 'hex') : null
  return { row: { ...row, answer } as KeyRow }
}

/** A first answer as it is kept: its status, the sealed answer, and the family the request acted in. */
export interface KeptAnswer {
  status: number
  answer: Buffer
  familyId: number | null
}

/** Keeps the answer of a claimed run: false when the claim is no longer this run's. */
export async function keepAnswer (db: Db, userId: number, key: string, claim: string, kept: KeptAnswer): Promise<boolean> {
  const rows = await db`
    update idempotency_keys set state = 'done', status = ${kept.status}, answer = ${kept.answer}, family_id = ${kept.familyId}, touched_at = now()
    where user_id = ${userId} and key = ${key} and claim = ${claim}::uuid and state = 'running'
  `
  return rows.count === 1
}

/**
 * Inside the transaction that holds the key (`lockKey`): keeps the answer,
 * unless a request running apart claimed the key meanwhile (then false).
 */
export async function keepLockedAnswer (db: Db, request: KeyedRequest, lifetime: number, staleAfter: number, kept: KeptAnswer): Promise<boolean> {
  const { userId, key, method, path, fingerprint } = request
  const rows = await db`
    insert into idempotency_keys as k (user_id, key, method, path, fingerprint, claim, state, status, answer, family_id, expires_at)
    values (${userId}, ${key}, ${method}, ${path}, ${fingerprint}, gen_random_uuid(), 'done', ${kept.status}, ${kept.answer}, ${kept.familyId},
            now() + make_interval(secs => ${lifetime}))
    on conflict (user_id, key) do update set
      method = excluded.method, path = excluded.path, fingerprint = excluded.fingerprint, claim = excluded.claim,
      state = 'done', status = excluded.status, answer = excluded.answer, family_id = excluded.family_id, created_at = now(), touched_at = now(), expires_at = excluded.expires_at
    where k.expires_at <= now()
      or (k.state = 'running' and k.touched_at < now() - make_interval(secs => ${staleAfter}))
  `
  return rows.count === 1
}

/** Gives a claimed key up: its run kept no answer, and a repeat runs afresh. */
export async function releaseKey (db: Db, userId: number, key: string, claim: string): Promise<void> {
  await db`delete from idempotency_keys where user_id = ${userId} and key = ${key} and claim = ${claim}::uuid and state = 'running'`
}

/** Deletes a key's row whatever its state: its answer can no longer be read. */
export async function forgetKey (db: Db, userId: number, key: string): Promise<void> {
  await db`delete from idempotency_keys where user_id = ${userId} and key = ${key}`
}

/** Tells that a claimed run is still alive. */
export async function touchKey (db: Db, userId: number, key: string, claim: string): Promise<void> {
  await db`update idempotency_keys set touched_at = now() where user_id = ${userId} and key = ${key} and claim = ${claim}::uuid and state = 'running'`
}

/** Deletes up to `limit` expired keys; answers how many went. */
export async function sweepKeys (db: Db, limit: number): Promise<number> {
  const rows = await db`
    delete from idempotency_keys
    where ctid = any(array(select ctid from idempotency_keys where expires_at <= now() limit ${limit}))
  `
  return rows.count
}
