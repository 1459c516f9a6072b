import type { Db } from '../db/client'
import type { FamilyRole } from '../lib/roles'
import { isOwner } from './families'
import { readPage, type Page, type PageRequest } from './list'

export interface Invite {
  id: number
  email: string
  role: FamilyRole
  expiresAt: Date
  createdAt: Date
}

export interface OpenInvite {
  id: number
  familyId: number
  familyName: string
  role: FamilyRole
}

export const INVITE_DAYS = 7

/** Who claims an invite: an account being registered with this e-mail, or an existing user. */
export type Claimant = { email: string } | { userId: number }

/** The invite `i` is worth what its maker may still do: the maker is an owner of its family, with an enabled account. */
function madeByAnOwner (db: Db) {
  return isOwner(db, db`i.family_id`, db`i.invited_by`)
}

/**
 * A valid invite for this claimant: not expired, used or revoked, made by a
 * user who is still an owner of the family, and naming the e-mail the
 * claimant registers with, or the existing user's e-mail when the user held
 * it at the time the invite was made.
 */
export async function findOpenInvite (db: Db, tokenHash: string, claimant: Claimant): Promise<OpenInvite | undefined> {
  const [row] = await db<OpenInvite[]>`
    select i.id, i.family_id as "familyId", f.name as "familyName", i.role
    from invites i join families f on f.id = i.family_id
    where i.token_hash = ${tokenHash}
      and i.used_at is null and i.revoked_at is null and i.expires_at > now()
      and ${madeByAnOwner(db)}
      and ${'email' in claimant
        ? db`lower(i.email) = lower(${claimant.email})`
        : db`exists (
            select 1 from users claiming
            where claiming.id = ${claimant.userId} and lower(claiming.email) = lower(i.email)
              and (claiming.email_changed_at is null or claiming.email_changed_at < i.created_at)
          )`}
  `
  return row
}

/**
 * Uses up an open invite in one statement, so that a token can never be used
 * twice, even by two requests at once. False when it was no longer open, or
 * its maker is no longer an owner: the caller has taken the family's clock,
 * which every change of its members takes too, so this sees the members as
 * they are at this moment.
 */
export async function useInvite (db: Db, inviteId: number, userId: number): Promise<boolean> {
  const rows = await db`
    update invites i set used_at = now(), used_by = ${userId}
    where i.id = ${inviteId} and i.used_at is null and i.revoked_at is null and i.expires_at > now()
      and ${madeByAnOwner(db)}
    returning i.id
  `
  return rows.length > 0
}

export async function listOpenInvites (db: Db, familyId: number, page: PageRequest): Promise<Page<Invite>> {
  return await readPage<Invite>(db, {
    ...page,
    select: db`id, email, role, expires_at as "expiresAt", created_at as "createdAt"`,
    from: db`from invites where family_id = ${familyId} and used_at is null and revoked_at is null and expires_at > now()`,
    order: db`order by id`
  })
}

/** A new invite replaces any open one for the same e-mail to the same family. */
export async function createInvite (
  db: Db,
  invite: { familyId: number, email: string, role: FamilyRole, tokenHash: string, invitedBy: number }
): Promise<Invite> {
  await db`
    update invites set revoked_at = now()
    where family_id = ${invite.familyId} and lower(email) = lower(${invite.email})
      and used_at is null and revoked_at is null
  `
  const [row] = await db<Invite[]>`
    insert into invites (family_id, email, role, token_hash, invited_by, expires_at)
    values (${invite.familyId}, ${invite.email}, ${invite.role}, ${invite.tokenHash}, ${invite.invitedBy},
            now() + make_interval(days => ${INVITE_DAYS}))
    returning id, email, role, expires_at as "expiresAt", created_at as "createdAt"
  `
  return row
}

/** Revokes an invite of this family; false when the family has no such open invite. */
export async function revokeInvite (db: Db, familyId: number, inviteId: number): Promise<boolean> {
  const rows = await db`
    update invites set revoked_at = coalesce(revoked_at, now())
    where id = ${inviteId} and family_id = ${familyId}
    returning id
  `
  return rows.length > 0
}
