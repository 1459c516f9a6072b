import { Type } from '@sinclair/typebox'
import { FamilyRoleSchema, Id, ListOf, Name, Pagination, StrictObject, Timestamp } from '../../lib/schemas'
import { Email } from '../../lib/account-schemas'

export const FamilyRole = FamilyRoleSchema({ $id: 'FamilyRole', title: 'FamilyRole' })

export const Member = Type.Object({
  userId: Id,
  name: Type.String(),
  email: Type.String(),
  role: Type.Ref('FamilyRole'),
  joinedAt: Timestamp
}, { $id: 'Member', title: 'Member' })

export const Invite = Type.Object({
  id: Id,
  email: Type.String(),
  role: Type.Ref('FamilyRole'),
  expiresAt: Timestamp,
  createdAt: Timestamp
}, { $id: 'Invite', title: 'Invite' })

export const CreatedInvite = Type.Object({
  ...Invite.properties,
  token: Type.String({ description: 'shown only here; the service keeps only its hash' })
}, { $id: 'CreatedInvite', title: 'CreatedInvite' })

export const FamilyList = ListOf('Family')
export const MemberList = ListOf('Member')
export const InviteList = ListOf('Invite')

export const FamilyBody = StrictObject({ name: Name(200) })
export const MemberBody = StrictObject({ role: FamilyRoleSchema() })
export const InviteBody = StrictObject({ email: Email, role: FamilyRoleSchema() })

export const ListQuery = Type.Object(Pagination)
export const FamilyParams = StrictObject({ id: Id })
export const MemberParams = StrictObject({ id: Id, userId: Id })
export const InviteParams = StrictObject({ id: Id, inviteId: Id })
