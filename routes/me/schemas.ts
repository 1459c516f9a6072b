import { Type } from '@sinclair/typebox'
import { FamilyRoleSchema, Id, ListOf, Nullable, Pagination, Secret, StrictObject, Timestamp } from '../../lib/schemas'
import { Email, Password, UserName } from '../../lib/account-schemas'

export const Me = Type.Object({
  id: Id,
  email: Type.String(),
  name: Type.String(),
  role: Type.Union([Type.Literal('admin'), Type.Literal('user')]),
  createdAt: Timestamp,
  families: Type.Array(Type.Object({ id: Id, name: Type.String(), role: FamilyRoleSchema() }))
}, { $id: 'Me', title: 'Me' })

export const PatchMeBody = StrictObject({
  name: Type.Optional(UserName),
  email: Type.Optional(Email)
})

export const PasswordBody = StrictObject({
  currentPassword: Secret({ minLength: 1, 'x-max-bytes': 72 }),
  newPassword: Password
})

export const Session = Type.Object({
  id: Id,
  createdAt: Timestamp,
  lastUsedAt: Timestamp,
  userAgent: Nullable(Type.String()),
  current: Type.Boolean()
}, { $id: 'Session', title: 'Session' })

export const SessionList = ListOf('Session')

export const ListQuery = Type.Object(Pagination)

export const SessionParams = StrictObject({ id: Id })
