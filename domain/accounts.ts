// Accounts: a new one, by registration or by a first sign-in with the
// identity provider, the account a provider's identity signs in to, and the
// link of an identity to the account of a link token.
import type { Tx } from '../db/client'
import { LOCKS, lockForTransaction } from '../db/locks'
import type { Registration } from '../io/config'
import type { ProviderIdentity } from '../outbound/oidc'
import type { FamilyRole } from '../lib/roles'
import { beginFamilyChange } from '../sql/changes'
import { addMember, insertFamily } from '../sql/families'
import { findIdentity, linkIdentity } from '../sql/oidc'
import { deleteLink, findOpenLink } from '../sql/identity-links'
import { anyUserExists, emailTaken, insertUser, type User } from '../sql/users'

/** An invite an account is made with: it joins the invite's family in its role instead of getting one of its own. */
export interface JoiningInvite {
  familyId: number
  role: FamilyRole
}

/**
 * A new account, in the transaction of its checks: the first one is an
 * administrator. With an invite, it joins that family; otherwise a family
 * named after it is made, with it as its owner.
 */
export async function openAccount (
  tx: Tx, account: { email: string, name: string, passwordHash: string | null, first: boolean }, invite: JoiningInvite | null
): Promise<User> {
  const user = await insertUser(tx, { email: account.email, name: account.name, passwordHash: account.passwordHash, role: account.first ? 'admin' : 'user' })
  await beginFamilyChange(tx, invite?.familyId ?? null, user.id)
  if (invite !== null) {
    await addMember(tx, invite.familyId, user.id, invite.role)
  } else {
    const family = await insertFamily(tx, `${account.name}'s family`)
    await addMember(tx, family.id, user.id, 'owner')
  }
  return user
}

/** Why a provider's identity gets no account here. */
export type SignInRefusal = 'ACCOUNT_DISABLED' | 'REGISTRATION_CLOSED' | 'ACCOUNT_EXISTS' | 'OIDC_EMAIL_MISSING'

/** Why a link token links no identity. */
export type LinkRefusal = 'OIDC_LINK_INVALID' | 'IDENTITY_TAKEN'

const EMAIL = /^[^\s@]+@[^\s@]+$/

/** An account's name from the provider's: its name, else the e-mail's local part, at most 100 characters. */
function accountName (identity: ProviderIdentity, email: string): string {
  const name = (identity.name ?? email.split('@')[0]).slice(0, 100).trim()
  return name === '' ? email.slice(0, 100) : name
}

/**
 * The account a provider's identity signs in to, in `tx`: the one it is
 * linked to (by issuer and subject). A first sign-in is never linked to an
 * existing account, whatever the provider says of the e-mail: the service
 * never verified the addresses accounts give themselves. When an account has
 * the identity's e-mail (in any case, a disabled one too), it is refused
 * ACCOUNT_EXISTS until that account links the identity; otherwise a new
 * account when the registration policy lets one be made (the first of the
 * service is an administrator). A disabled account is refused. Runs under
 * the registration lock, so that two first sign-ins make one account and
 * one administrator.
 */
export async function accountOf (tx: Tx, identity: ProviderIdentity, registration: Registration): Promise<{ userId: number } | { refused: SignInRefusal }> {
  await lockForTransaction(tx, LOCKS.registration)
  const known = await findIdentity(tx, identity.issuer, identity.subject)
  if (known !== undefined) return known.disabled ? { refused: 'ACCOUNT_DISABLED' } : { userId: known.userId }

  const email = identity.email !== null && identity.email.length <= 254 && EMAIL.test(identity.email) ? identity.email : null
  if (email !== null && await emailTaken(tx, email)) return { refused: 'ACCOUNT_EXISTS' }
  const first = !(await anyUserExists(tx))
  if (!first && registration !== 'open') return { refused: 'REGISTRATION_CLOSED' }
  if (email === null) return { refused: 'OIDC_EMAIL_MISSING' }
  const user = await openAccount(tx, { email, name: accountName(identity, email), passwordHash: null, first }, null)
  await linkIdentity(tx, identity.issuer, identity.subject, user.id)
  return { userId: user.id }
}

/**
 * Links a provider's identity to the user of a link token, in `tx`, and uses
 * the token up: the e-mail plays no part. Refused when the token is unknown,
 * expired or used, or its user disabled (OIDC_LINK_INVALID), and when the
 * identity is another account's (IDENTITY_TAKEN, the token kept). An identity
 * already linked to the same user is left as it is. Runs under the
 * registration lock, like a first sign-in, so that an identity is linked once.
 */
export async function linkedAccount (tx: Tx, identity: ProviderIdentity, linkHash: string): Promise<{ userId: number } | { refused: LinkRefusal }> {
  await lockForTransaction(tx, LOCKS.registration)
  const link = await findOpenLink(tx, linkHash, true)
  if (link === undefined || link.disabled) return { refused: 'OIDC_LINK_INVALID' }
  const known = await findIdentity(tx, identity.issuer, identity.subject)
  if (known !== undefined && known.userId !== link.userId) return { refused: 'IDENTITY_TAKEN' }
  if (known === undefined) await linkIdentity(tx, identity.issuer, identity.subject, link.userId)
  await deleteLink(tx, linkHash)
  return { userId: link.userId }
}
