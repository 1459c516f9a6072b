import type { Db } from '../db/client'

/** Who made a link token: the user, signed in and proving the password, or an administrator. */
export type LinkMaker = 'user' | 'admin'

/** An open link token, as a sign-in with the provider finds it. */
export interface OpenLink {
  userId: number
  /** The hash of the browser the user asked in; null for an administrator's link, which any browser opens. */
  browserHash: string | null
  disabled: boolean
}

/**
 * Stores a user's link token of a maker for `ttlSeconds`, in place of the
 * one the same maker opened before; tokens expired for an hour are deleted
 * on the way. Answers when it expires.
 */
export async function saveLink (
  db: Db, link: { userId: number, madeBy: LinkMaker, tokenHash: string, browserHash: string | null }, ttlSeconds: number
): Promise<Date> {
  await db`delete from identity_links where expires_at < now() - interval '1 hour'`
  const [row] = await db<{ expiresAt: Date }[]>`
    insert into identity_links (token_hash, user_id, made_by, browser_hash, expires_at)
    values (${link.tokenHash}, ${link.userId}, ${link.madeBy}, ${link.browserHash}, now() + make_interval(secs => ${ttlSeconds}))
    on conflict (user_id, made_by) do update
      set token_hash = excluded.token_hash, browser_hash = excluded.browser_hash, expires_at = excluded.expires_at
    returning expires_at as "expiresAt"
  `
  return row.expiresAt
}

/** An unexpired link token, with whether its user is disabled; locked until the transaction ends when `lock` says so. */
export async function findOpenLink (db: Db, tokenHash: string, lock = false): Promise<OpenLink | undefined> {
  const [row] = await db<OpenLink[]>`
    select l.user_id as "userId", l.browser_hash as "browserHash", u.disabled
    from identity_links l join users u on u.id = l.user_id
    where l.token_hash = ${tokenHash} and l.expires_at > now()
    ${lock ? db`for update of l` : db``}
  `
  return row
}

export async function deleteLink (db: Db, tokenHash: string): Promise<void> {
  await db`delete from identity_links where token_hash = ${tokenHash}`
}
