// The last-owner rule: a family keeps at least one owner while it has members.
import type { Db } from '../db/client'
import { errors } from '../lib/errors'
import type { FamilyRole } from '../lib/roles'
import { lockMembers } from '../sql/families'

/** A member's place in a family: the member's role and the family's head counts. */
export interface Standing {
  role: FamilyRole
  owners: number
  members: number
}

/** A member's standing, read from the family's roles by user id; undefined when not a member. */
export function standingIn (roles: Map<number, FamilyRole>, userId: number): Standing | undefined {
  const role = roles.get(userId)
  if (role === undefined) return undefined
  const owners = [...roles.values()].filter(r => r === 'owner').length
  return { role, owners, members: roles.size }
}

/**
 * Locks the family's memberships for the rest of the transaction and answers
 * the member's standing; a 404 when the user is not a member.
 */
export async function lockedStanding (db: Db, familyId: number, userId: number): Promise<Standing> {
  const standing = standingIn(await lockMembers(db, familyId), userId)
  if (standing === undefined) throw new errors.notFound('Member')
  return standing
}

/**
 * True when the member is the family's only owner and would stop being one:
 * demoted to `next`, or gone when `next` is null. With `emptyAllowed`, the
 * family's last member may go, leaving a family without members.
 */
export function losesLastOwner (standing: Standing, next: FamilyRole | null, emptyAllowed = false): boolean {
  if (standing.role !== 'owner' || standing.owners !== 1 || next === 'owner') return false
  return !(emptyAllowed && next === null && standing.members === 1)
}
