import type { Db } from '../plugins/db'
import type { FamilyRole } from './sessions'

export interface ClaimedInvite {
  id: number
  familyId: number
  familyName: string
  role: FamilyRole
}

/**
 * Uses up an open invite for this e-mail in one statement, so that a token can
 * never be used twice, even by two requests at once. Undefined when the token
 * is unknown, expired, used, revoked or for another e-mail.
 */
export async function claimInvite (db: Db, tokenHash: string, email: string, userId: number | null): Promise<ClaimedInvite | undefined> {
  const [row] = await db<ClaimedInvite[]>`
    update invites i set used_at = now(), used_by = ${userId}
    from families f
    where f.id = i.family_id
      and i.token_hash = ${tokenHash}
      and i.used_at is null and i.revoked_at is null and i.expires_at > now()
      and lower(i.email) = lower(${email})
    returning i.id, i.family_id as "familyId", f.name as "familyName", i.role
  `
  return row
}

export async function setInviteUser (db: Db, inviteId: number, userId: number): Promise<void> {
  await db`update invites set used_by = ${userId} where id = ${inviteId}`
}
