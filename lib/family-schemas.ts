import { Type } from '@sinclair/typebox'
import { FamilyRoleEnum, Id, Nullable, Timestamp, Version } from './schemas'

/** A family as its members and the administrators see it: the families routes and the admin routes share it. */
export const Family = Type.Object({
  id: Id,
  name: Type.String(),
  role: Nullable(FamilyRoleEnum),
  memberCount: Type.Integer({ minimum: 0 }),
  childCount: Type.Integer({ minimum: 0 }),
  version: Version,
  createdAt: Timestamp
}, { $id: 'Family', title: 'Family', description: '`role` is the caller\'s role in the family. The version moves when the name, the members, their roles or the number of children change.' })
