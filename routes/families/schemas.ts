import { Type } from '@sinclair/typebox'
import { Id, ListOf, Name, Nullable, Pagination, StrictObject, Timestamp, Version } from '../../lib/schemas'
import { Email } from '../auth/schemas'

export const FamilyRole = Type.Union([Type.Literal('owner'), Type.Literal('member'), Type.Literal('viewer')], { $id: 'FamilyRole', title: 'FamilyRole' })

export const Family = Type.Object({
  id: Id,
  name: Type.String(),
  role: Nullable(Type.String({ enum: ['owner', 'member', 'viewer'] })),
  memberCount: Type.Integer({ minimum: 0 }),
  childCount: Type.Integer({ minimum: 0 }),
  version: Version,
  createdAt: Timestamp
}, { $id: 'Family', title: 'Family', description: '`role` is the caller\'s role in the family. The version moves when the name, the members, their roles or the number of children change.' })

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
  id: Id,
  email: Type.String(),
  role: Type.Ref('FamilyRole'),
  expiresAt: Timestamp,
  createdAt: Timestamp,
  token: Type.String({ description: 'shown only here; the service keeps only its hash' })
}, { $id: 'CreatedInvite', title: 'CreatedInvite' })

export const AcceptedInvite = Type.Object({
  familyId: Id,
  familyName: Type.String(),
  role: Type.Ref('FamilyRole')
}, { $id: 'AcceptedInvite', title: 'AcceptedInvite' })

export const FamilyList = ListOf('Family')
export const MemberList = ListOf('Member')
export const InviteList = ListOf('Invite')

const RoleBody = Type.Union([Type.Literal('owner'), Type.Literal('member'), Type.Literal('viewer')])

export const FamilyBody = StrictObject({ name: Name(200) })
export const MemberBody = StrictObject({ role: RoleBody })
export const InviteBody = StrictObject({ email: Email, role: RoleBody })
export const AcceptBody = StrictObject({ token: Type.String({ minLength: 1, maxLength: 200, 'x-secret': true }) })

export const ListQuery = Type.Object(Pagination)
export const FamilyParams = StrictObject({ id: Id })
export const MemberParams = StrictObject({ id: Id, userId: Id })
export const InviteParams = StrictObject({ id: Id, inviteId: Id })
