/** A user's role in the service. */
export type Role = 'admin' | 'user'

/** The roles of a family's members, from the most to the least powerful. */
export const FAMILY_ROLES = ['owner', 'member', 'viewer'] as const

/** A user's role in a family. */
export type FamilyRole = typeof FAMILY_ROLES[number]

const RANK: Record<FamilyRole, number> = { viewer: 1, member: 2, owner: 3 }

/** True when `role` may do what `needed` may. */
export function covers (role: FamilyRole, needed: FamilyRole): boolean {
  return RANK[role] >= RANK[needed]
}
