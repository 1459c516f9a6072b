import { Type } from '@sinclair/typebox'
import { Id, Nullable, Secret, StrictObject, Timestamp } from '../../lib/schemas'
import { Email, FrontEndPath, MAX_PASSWORD_BYTES, Password, UserName } from '../../lib/account-schemas'

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

export const OidcStartQuery = Type.Object({
  redirect: FrontEndPath,
  link: Type.Optional(Secret({
    minLength: 1,
    maxLength: 200,
    description: 'A link token (POST /api/me/identities/link, POST /api/admin/users/{id}/identity-link): the identity the person signs in with is linked to the token\'s account'
  }))
})

export const OidcCallbackQuery = Type.Object({
  state: Type.Optional(Type.String({ maxLength: 1000 })),
  code: Type.Optional(Type.String({ maxLength: 4000 })),
  error: Type.Optional(Type.String({ maxLength: 1000 }))
})

export const OidcExchangeBody = StrictObject({
  code: Secret({ minLength: 1, maxLength: 200, description: 'the one-time code from the #oidcCode= fragment' })
})

export const OidcSettings = Type.Object({
  enabled: Type.Boolean({ description: 'sign-in with the identity provider is configured' }),
  name: Nullable(Type.String({ description: 'what to call the provider: "Sign in with <name>"' })),
  passwordLogin: Type.Boolean({ description: 'false with OIDC_ONLY: only the first administrator may still sign in with a password, until an administrator has signed in with the provider' })
}, { $id: 'OidcSettings', title: 'OidcSettings' })

export const Redirect = Type.Null({ description: 'A redirect: see the Location header' })
