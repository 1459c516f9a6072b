import { Type } from '@sinclair/typebox'
import { FamilyRoleSchema, Id, ListOf, Nullable, Pagination, StrictObject, Timestamp } from '../../lib/schemas'
import { Email, FrontEndPath, Password, UserName } from '../../lib/account-schemas'
import { Family } from '../../lib/family-schemas'
import { KINDS } from '../../kinds'
import { nounOf } from '../../kinds/kind'

const Count = Type.Integer({ minimum: 0 })
const UserRole = Type.Union([Type.Literal('admin'), Type.Literal('user')])

export const Stats = Type.Object({
  users: Count,
  admins: Type.Integer({ minimum: 0, description: 'users with role admin, disabled ones included' }),
  families: Count,
  children: Count,
  // Every kind of record, under its key in an export.
  ...Object.fromEntries(KINDS.map(kind => [kind.key, Type.Integer({ minimum: 0, description: `${nounOf({ singular: kind.plural })} of every child` })])),
  attachments: Count,
  storageBytes: Type.Integer({ minimum: 0, description: 'the sizes of stored attachments and avatars, summed' }),
  activeSessions: Type.Integer({ minimum: 0, description: 'sessions neither revoked nor expired' }),
  responseCache: Type.Object({
    maxBytes: Type.Integer({ minimum: 0, description: 'RESPONSE_CACHE_MB in bytes' }),
    bytes: Type.Integer({ minimum: 0 }),
    entries: Type.Integer({ minimum: 0 }),
    hits: Type.Integer({ minimum: 0 }),
    misses: Type.Integer({ minimum: 0 })
  }, { description: 'the cache of answers of the instance that answers, since it started' })
}, { $id: 'Stats', title: 'Stats' })

export const AdminUser = Type.Object({
  id: Id,
  email: Type.String(),
  name: Type.String(),
  role: UserRole,
  createdAt: Timestamp,
  disabled: Type.Boolean(),
  lastLoginAt: Nullable(Timestamp),
  familyCount: Count
}, { $id: 'AdminUser', title: 'AdminUser' })

export const AdminFamily = Type.Object({
  ...Family.properties,
  members: Type.Array(Type.Ref('Member'))
}, { $id: 'AdminFamily', title: 'AdminFamily', description: 'A family with every member; `role` is the administrator\'s own, null when not a member' })

export const AdminUserList = ListOf('AdminUser')

/** A `sort` parameter: a comma-separated list of the given fields, each optionally prefixed with `-`. */
function Sort (fields: string[], defaultOrder: string) {
  const field = `-?(${fields.join('|')})`
  return Type.Optional(Type.String({
    pattern: `^${field}(,${field})*$`,
    description: `Comma-separated fields among ${fields.join(', ')}, each optionally prefixed with - for descending; default ${defaultOrder}. Ties are broken by id.`
  }))
}

function Search (description: string) {
  return Type.Optional(Type.String({ minLength: 1, maxLength: 200, description }))
}

export const USER_SORT_FIELDS = ['createdAt', 'name', 'email'] as const
export const FAMILY_SORT_FIELDS = ['id', 'name', 'createdAt'] as const

export const UserListQuery = Type.Object({
  ...Pagination,
  q: Search('finds users whose name or e-mail contains it, ignoring case'),
  sort: Sort([...USER_SORT_FIELDS], 'createdAt')
})

export const FamilyListQuery = Type.Object({
  ...Pagination,
  q: Search('finds families whose name contains it, ignoring case'),
  sort: Sort([...FAMILY_SORT_FIELDS], 'id')
})

export const CreateUserBody = StrictObject({
  email: Email,
  password: Password,
  name: UserName,
  role: Type.Optional(Nullable(UserRole))
})

export const UpdateUserBody = StrictObject({
  name: Type.Optional(UserName),
  email: Type.Optional(Email),
  role: Type.Optional(UserRole),
  disabled: Type.Optional(Type.Boolean())
})

export const SetPasswordBody = StrictObject({ newPassword: Password })

export const AdminIdentityLinkBody = StrictObject({
  redirect: Type.Optional(FrontEndPath)
})

export const AddMemberBody = StrictObject({ userId: Id, role: FamilyRoleSchema() })

export const UserParams = StrictObject({ id: Id })
export const IdentityParams = StrictObject({ id: Id, identityId: Id })
export const FamilyParams = StrictObject({ id: Id })
export const MemberParams = StrictObject({ id: Id, userId: Id })
