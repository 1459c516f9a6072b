import type { Db } from '../db/client'
import { readPage, type Page, type PageRequest } from './list'

/** A sign-in under way, as its callback finds it. */
export interface OidcFlow {
  codeVerifier: string
  nonce: string
  redirect: string
  /** The hash of the link token the sign-in was started with, or null for a sign-in. */
  linkHash: string | null
}

/** Stores a new flow for `ttlSeconds`; flows expired for an hour are deleted on the way. */
export async function insertFlow (
  db: Db, flow: OidcFlow & { stateHash: string, browserHash: string }, ttlSeconds: number
): Promise<void> {
  await db`delete from oidc_flows where expires_at < now() - interval '1 hour'`
  await db`
    insert into oidc_flows (state_hash, browser_hash, code_verifier, nonce, redirect, link_hash, expires_at)
    values (${flow.stateHash}, ${flow.browserHash}, ${flow.codeVerifier}, ${flow.nonce}, ${flow.redirect}, ${flow.linkHash},
            now() + make_interval(secs => ${ttlSeconds}))
  `
}

/**
 * Takes a flow by its state, once: undefined when it is unknown, used,
 * expired, or was started by another browser (whose flow is left alone).
 */
export async function takeFlow (db: Db, stateHash: string, browserHash: string): Promise<OidcFlow | undefined> {
  const [row] = await db<OidcFlow[]>`
    delete from oidc_flows
    where state_hash = ${stateHash} and browser_hash = ${browserHash} and expires_at > now()
    returning code_verifier as "codeVerifier", nonce, redirect, link_hash as "linkHash"
  `
  return row
}

/** Stores a one-time code of a user for `ttlSeconds`; codes expired for an hour are deleted on the way. */
export async function insertCode (db: Db, codeHash: string, userId: number, ttlSeconds: number): Promise<void> {
  await db`delete from oidc_codes where expires_at < now() - interval '1 hour'`
  await db`
    insert into oidc_codes (code_hash, user_id, expires_at)
    values (${codeHash}, ${userId}, now() + make_interval(secs => ${ttlSeconds}))
  `
}

/** Uses a one-time code, once: its user, or undefined when it is unknown, used or expired. */
export async function takeCode (db: Db, codeHash: string): Promise<number | undefined> {
  const [row] = await db<{ userId: number, fresh: boolean }[]>`
    delete from oidc_codes where code_hash = ${codeHash}
    returning user_id as "userId", expires_at > now() as fresh
  `
  return row?.fresh === true ? row.userId : undefined
}

/** The account a provider's subject signed in to before, with whether it is disabled. */
export async function findIdentity (db: Db, issuer: string, subject: string): Promise<{ userId: number, disabled: boolean } | undefined> {
  const [row] = await db<{ userId: number, disabled: boolean }[]>`
    select u.id as "userId", u.disabled
    from user_identities i join users u on u.id = i.user_id
    where i.issuer = ${issuer} and i.subject = ${subject}
  `
  return row
}

export async function linkIdentity (db: Db, issuer: string, subject: string, userId: number): Promise<void> {
  await db`insert into user_identities (issuer, subject, user_id) values (${issuer}, ${subject}, ${userId})`
}

/** An identity of the provider linked to an account. */
export interface LinkedIdentity {
  id: number
  issuer: string
  subject: string
  linkedAt: Date
}

export async function listIdentities (db: Db, userId: number, page: PageRequest): Promise<Page<LinkedIdentity>> {
  return await readPage<LinkedIdentity>(db, {
    ...page,
    select: db`id, issuer, subject, created_at as "linkedAt"`,
    from: db`from user_identities where user_id = ${userId}`,
    order: db`order by id`
  })
}

/** Unlinks one identity of a user: false when the user has none of that id. */
export async function unlinkIdentity (db: Db, userId: number, id: number): Promise<boolean> {
  const rows = await db`delete from user_identities where user_id = ${userId} and id = ${id} returning id`
  return rows.length === 1
}

/**
 * Whether a user may still sign in with a password while password sign-in is
 * off: only the first administrator, and only until an administrator has
 * signed in with the provider.
 */
export async function passwordStillAllowed (db: Db, userId: number): Promise<boolean> {
  const [row] = await db<{ allowed: boolean }[]>`
    select ${userId}::int = (select min(id) from users where role = 'admin')
      and not exists (select 1 from user_identities i join users u on u.id = i.user_id where u.role = 'admin') as allowed
  `
  return row.allowed
}
