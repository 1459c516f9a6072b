import type { PendingQuery, Row } from 'postgres'
import type { Db } from '../db/client'
import type { FamilyRole } from '../lib/roles'
import { pageWithTotal, type Page } from './list'

type Fragment = PendingQuery<Row[]>

export type ShareStatus = 'active' | 'expired' | 'revoked' | 'locked'
export type AccessOutcome = 'served' | 'passcode-missing' | 'passcode-wrong' | 'busy' | 'refused'

/** A link as its owners see it, without its secrets. */
export interface ShareRow {
  id: number
  childId: number
  label: string
  sections: string[]
  expiresAt: Date
  passcode: boolean
  remainingAttempts: number | null
  status: ShareStatus
  createdAt: Date
  revokedAt: Date | null
  createdBy: { id: number, name: string } | null
  accessCount: number
  lastAccessAt: Date | null
  accesses: Array<{ at: string, recipient: string, address: string | null, outcome: AccessOutcome }> | null
}

/** Accesses a share shows, the latest first; `accessCount` counts them all. */
export const ACCESSES_SHOWN = 100

/** Wrong passcodes that kill a link. */
export const PASSCODE_ATTEMPTS = 10

/** A share that may be served: not revoked, not locked by wrong passcodes, not expired, its file still there. */
function live (db: Db, alias: string): Fragment {
  const s = db(alias)
  return db`(${s}.revoked_at is null and ${s}.locked_at is null and ${s}.expires_at > now() and ${s}.content is not null)`
}

/** The shares of a status, as a condition on the table's own columns. */
function ofStatus (db: Db, status: ShareStatus): Fragment {
  switch (status) {
    case 'active': return db`revoked_at is null and locked_at is null and expires_at > now()`
    case 'expired': return db`revoked_at is null and locked_at is null and expires_at <= now()`
    case 'revoked': return db`revoked_at is not null`
    case 'locked': return db`revoked_at is null and locked_at is not null`
  }
}

/**
 * Locks the child's row for the rest of the transaction and counts its
 * active links, so that two creates at once cannot pass the limit together.
 */
export async function lockActiveShareCount (db: Db, childId: number): Promise<number> {
  await db`select id from children where id = ${childId} for no key update`
  const [row] = await db<{ n: number }[]>`select count(*)::int as n from shares where child_id = ${childId} and ${ofStatus(db, 'active')}`
  return row.n
}

export interface NewShare {
  childId: number
  createdBy: number
  label: string
  sections: readonly string[]
  tokenHash: string
  passcodeHash: string | null
  expiresAt: Date
  content: string
}

export async function insertShare (db: Db, share: NewShare): Promise<number> {
  const [row] = await db<{ id: number }[]>`
    insert into shares (child_id, created_by, label, sections, token_hash, passcode_hash, expires_at, content, content_length)
    values (${share.childId}, ${share.createdBy}, ${share.label}, ${db.array(share.sections as string[])}, ${share.tokenHash},
            ${share.passcodeHash}, ${share.expiresAt}, ${share.content}, ${share.content.length})
    returning id
  `
  return row.id
}

/**
 * The shares of a child, or one share, as the caller sees them: the access
 * log only for an owner and for the member who made the link.
 */
function sharesQuery (db: Db, where: Fragment, viewer: { userId: number, role: FamilyRole }, page: { order: Fragment, limit: Fragment }): PendingQuery<Array<ShareRow & { total: number }>> {
  const showLog = db`(${viewer.role} = 'owner' or p.created_by = ${viewer.userId})`
  return db<Array<ShareRow & { total: number }>>`
    select p.id, p.child_id as "childId", p.label, p.sections, p.expires_at as "expiresAt",
           p.passcode_hash is not null as passcode,
           case when p.passcode_hash is null then null else ${PASSCODE_ATTEMPTS} - p.wrong_passcodes end as "remainingAttempts",
           case when p.revoked_at is not null then 'revoked' when p.locked_at is not null then 'locked'
                when p.expires_at <= now() then 'expired' else 'active' end as status,
           p.created_at as "createdAt", p.revoked_at as "revokedAt",
           case when u.id is null then null else json_build_object('id', u.id, 'name', u.name) end as "createdBy",
           (select count(*)::int from share_accesses a where a.share_id = p.id) as "accessCount",
           (select max(a.at) from share_accesses a where a.share_id = p.id) as "lastAccessAt",
           case when ${showLog} then (
             select coalesce(json_agg(json_build_object('at', api_timestamp(a.at), 'recipient', a.recipient, 'address', a.address, 'outcome', a.outcome)), '[]')
             from (
               select at, recipient, address, outcome from share_accesses
               where share_id = p.id order by at desc, id desc limit ${ACCESSES_SHOWN}
             ) a
           ) end as accesses,
           p.total
    from (
      select s.*, count(*) over ()::int as total, row_number() over (${page.order}) as rn
      from shares s
      where ${where}
      ${page.order}
      ${page.limit}
    ) p
    left join users u on u.id = p.created_by
    order by p.rn
  `
}

/** A page of a child's shares, in the order given, of one status or all. */
export async function listShares (
  db: Db, childId: number, viewer: { userId: number, role: FamilyRole }, options: { order: Fragment, limit: number, offset: number, status?: ShareStatus }
): Promise<Page<ShareRow>> {
  const where = db`s.child_id = ${childId} ${options.status === undefined ? db`` : db`and ${ofStatus(db, options.status)}`}`
  const rows = await sharesQuery(db, where, viewer, { order: options.order, limit: db`limit ${options.limit} offset ${options.offset}` })
  return await pageWithTotal<ShareRow>(db, rows, options.offset, db`(select count(*) from shares s where ${where})`)
}

/** One share as the caller sees it, or undefined. */
export async function findShare (db: Db, id: number, viewer: { userId: number, role: FamilyRole }): Promise<ShareRow | undefined> {
  const [row] = await sharesQuery(db, db`s.id = ${id}`, viewer, { order: db`order by id`, limit: db`` })
  if (row === undefined) return undefined
  const { total: _total, ...share } = row
  return share
}

/** Revokes a share: it answers nothing from now on, and its file goes. A share revoked already stays as it was. */
export async function revokeShare (db: Db, id: number): Promise<void> {
  await db`update shares set revoked_at = coalesce(revoked_at, now()), content = null where id = ${id}`
}

/** What a manifest request finds of a link, by its token's hash. */
export interface FoundLink {
  id: number
  live: boolean
  needsPasscode: boolean
  /** The passcode's hash, when the link is live and needs one. */
  passcodeHash: string | null
  /** The encrypted file, when the link is live and needs no passcode. */
  content: string | null
  createdAt: Date
}

/**
 * A manifest request's first statement, the same whether the link exists,
 * has ended or never existed: it finds the link by its token's hash and
 * records the request in its access log. A link that has ended is logged as
 * refused; one that needs no passcode as served, with its file answered.
 * A request for a link that needs a passcode is logged once the passcode
 * is checked.
 */
export async function openLink (db: Db, hash: string, request: { recipient: string, address: string }): Promise<FoundLink | undefined> {
  const [row] = await db<FoundLink[]>`
    with found as (
      select id, ${live(db, 'shares')} as live, passcode_hash, passcode_hash is not null as "needsPasscode", content, created_at
      from shares
      where token_hash = ${hash}
    ), logged as (
      insert into share_accesses (share_id, recipient, address, outcome)
      select id, ${request.recipient}, ${request.address}, case when live then 'served' else 'refused' end
      from found
      where not live or not "needsPasscode"
    )
    select id, live, "needsPasscode",
           case when live then passcode_hash end as "passcodeHash",
           case when live and not "needsPasscode" then content end as content,
           created_at as "createdAt"
    from found
  `
  return row
}

/**
 * Takes one of a live link's passcode checks: `taken`, or `busy` when the
 * checks left are all in flight, or `gone` when the link has ended.
 */
export async function takeAttempt (db: Db, id: number): Promise<'taken' | 'busy' | 'gone'> {
  const [row] = await db<{ taken: boolean, live: boolean }[]>`
    with taken as (
      update shares set attempts_left = attempts_left - 1
      where id = ${id} and attempts_left > 0 and ${live(db, 'shares')}
      returning id
    )
    select exists (select 1 from taken) as taken, ${live(db, 's')} as live from shares s where s.id = ${id}
  `
  if (row === undefined || !row.live) return 'gone'
  return row.taken ? 'taken' : 'busy'
}

/**
 * Logs a request refused before its passcode was checked: `busy` when it
 * could not be checked now, `refused` when the link ended meanwhile. With
 * `giveBack`, it gives back the check it took.
 */
export async function refuseUnchecked (
  db: Db, id: number, outcome: 'busy' | 'refused', request: { recipient: string, address: string }, giveBack = false
): Promise<void> {
  await db`
    with back as (
      update shares set attempts_left = attempts_left + 1 where id = ${id} and ${giveBack}
    )
    insert into share_accesses (share_id, recipient, address, outcome) values (${id}, ${request.recipient}, ${request.address}, ${outcome})
  `
}

/** A right passcode gives its check back, logs the request as served and answers the file (null when the link ended meanwhile). */
export async function servePasscodeLink (db: Db, id: number, request: { recipient: string, address: string }): Promise<string | null> {
  const [row] = await db<{ content: string | null }[]>`
    with back as (
      update shares set attempts_left = attempts_left + 1 where id = ${id}
      returning content, ${live(db, 'shares')} as live
    ), logged as (
      insert into share_accesses (share_id, recipient, address, outcome)
      select ${id}, ${request.recipient}, ${request.address}, case when live then 'served' else 'refused' end from back
    )
    select case when live then content end as content from back
  `
  return row?.content ?? null
}

/**
 * A wrong passcode: it keeps the check it took and counts; the tenth kills
 * the link and removes its file. Logged, and answers the wrong passcodes the
 * link still takes.
 */
export async function refuseWrongPasscode (db: Db, id: number, request: { recipient: string, address: string }): Promise<number> {
  const [row] = await db<{ left: number }[]>`
    with counted as (
      update shares set
        wrong_passcodes = wrong_passcodes + 1,
        locked_at = case when wrong_passcodes + 1 >= ${PASSCODE_ATTEMPTS} then coalesce(locked_at, now()) else locked_at end,
        content = case when wrong_passcodes + 1 >= ${PASSCODE_ATTEMPTS} then null else content end
      where id = ${id}
      returning ${PASSCODE_ATTEMPTS} - wrong_passcodes as "left"
    ), logged as (
      insert into share_accesses (share_id, recipient, address, outcome) values (${id}, ${request.recipient}, ${request.address}, 'passcode-wrong')
    )
    select "left" from counted
  `
  return row?.left ?? 0
}

/** A request without the passcode the link needs: logged, and answers the wrong passcodes the link still takes. */
export async function refuseMissingPasscode (db: Db, id: number, request: { recipient: string, address: string }): Promise<number> {
  const [row] = await db<{ left: number }[]>`
    with logged as (
      insert into share_accesses (share_id, recipient, address, outcome) values (${id}, ${request.recipient}, ${request.address}, 'passcode-missing')
    )
    select ${PASSCODE_ATTEMPTS} - wrong_passcodes as "left" from shares where id = ${id}
  `
  return row?.left ?? 0
}

/** A short-lived address of a link's file: its token's hash, for an hour. */
export async function insertFileLink (db: Db, shareId: number, hash: string, seconds: number): Promise<void> {
  await db`insert into share_file_links (token_hash, share_id, expires_at) values (${hash}, ${shareId}, now() + make_interval(secs => ${seconds}))`
}

/** A file's address used once: the link's file while both are live, otherwise undefined. */
export async function useFileLink (db: Db, hash: string): Promise<string | undefined> {
  const [row] = await db<{ content: string }[]>`
    with used as (
      delete from share_file_links where token_hash = ${hash} returning share_id, expires_at
    )
    select s.content from used join shares s on s.id = used.share_id
    where used.expires_at > now() and ${live(db, 's')}
  `
  return row?.content
}

/**
 * Tidies up: ended links lose their file, links ended more than `keepDays`
 * ago go with their access log, and used-up file addresses go. Answers
 * what it removed.
 */
export async function sweepShares (db: Db, keepDays: number): Promise<{ emptied: number, removed: number }> {
  const emptied = await db`update shares set content = null where content is not null and expires_at <= now()`
  const removed = await db`
    delete from shares
    where least(expires_at, coalesce(revoked_at, 'infinity'), coalesce(locked_at, 'infinity')) < now() - make_interval(days => ${keepDays})
  `
  await db`delete from share_file_links where expires_at <= now()`
  return { emptied: emptied.count, removed: removed.count }
}

/** The stored files of a child's attachments, newest first, as the attachments list orders them. */
export async function attachmentFiles (db: Db, childId: number): Promise<Array<{ id: number, storedName: string, sizeBytes: number }>> {
  return await db<Array<{ id: number, storedName: string, sizeBytes: number }>>`
    select id, stored_name as "storedName", size_bytes as "sizeBytes" from attachments where child_id = ${childId}
  `
}
