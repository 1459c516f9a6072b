import { Type } from '@sinclair/typebox'
import { Id, Nullable, Secret, StrictObject, Timestamp } from '../../lib/schemas'
import { MAX_PASSWORD_BYTES } from '../../lib/passwords'
import { Email, Password, UserName } from '../../lib/account-schemas'

export const User = Type.Object({
  id: Id,
  email: Type.String(),
  name: Type.String(),
  role: Type.Union([Type.Literal('admin'), Type.Literal('user')]),
  createdAt: Timestamp
}, { $id: 'User', title: 'User' })

export const TokenPair = Type.Object({
  accessToken: Type.String(),
  refreshToken: Type.String(),
  tokenType: Type.Literal('Bearer'),
  expiresIn: Type.Integer({ description: 'access token lifetime in seconds' }),
  refreshExpiresIn: Type.Integer({ description: 'refresh token lifetime in seconds' }),
  user: Type.Ref('User')
}, { $id: 'TokenPair', title: 'TokenPair' })

export const RegisterBody = StrictObject({
  email: Email,
  password: Password,
  name: UserName,
  inviteToken: Type.Optional(Nullable(Secret({ minLength: 1, maxLength: 200 })))
})

export const LoginBody = StrictObject({
  email: Type.String({ minLength: 1, maxLength: 254 }),
  password: Secret({ minLength: 1, 'x-max-bytes': MAX_PASSWORD_BYTES })
})

export const RefreshBody = StrictObject({
  refreshToken: Secret({ minLength: 1, maxLength: 2000 })
})

export const LogoutBody = StrictObject({
  refreshToken: Type.Optional(Nullable(Secret({ minLength: 1, maxLength: 2000 })))
})
