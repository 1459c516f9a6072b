import { Type } from '@sinclair/typebox'
import { FamilyRoleSchema, Id, ListOf, Name, Nullable, Pagination, Secret, StrictObject, Timestamp } from '../../lib/schemas'
import { Email, FrontEndPath, Password, UserName } from '../../lib/account-schemas'
import { LANGUAGES, UNIT_SYSTEMS } from '../../lib/preferences'

const preferenceFields = {
  units: Type.Union(UNIT_SYSTEMS.map(units => Type.Literal(units)), {
    description: 'The units of every text made for the user: metric (kg, cm, °C) or imperial (lb and oz, in, °F). The JSON stays in SI units'
  }),
  language: Type.Union(LANGUAGES.map(language => Type.Literal(language)), { description: 'The language of every text made for the user: reminders, the report, the share summary' }),
  timeZone: Type.String({ minLength: 1, maxLength: 64, description: 'An IANA time zone: of the dates and times in texts, and of "today" in reminders when the quiet hours name none', examples: ['Europe/Berlin'] })
}

export const Preferences = Type.Object(preferenceFields, {
  $id: 'Preferences', title: 'Preferences', description: 'What every text made for the user is written in; by default metric, en and UTC'
})

export const Me = Type.Object({
  id: Id,
  email: Type.String(),
  name: Type.String(),
  role: Type.Union([Type.Literal('admin'), Type.Literal('user')]),
  createdAt: Timestamp,
  preferences: Type.Ref('Preferences'),
  families: Type.Array(Type.Object({ id: Id, name: Type.String(), role: FamilyRoleSchema() }))
}, { $id: 'Me', title: 'Me' })

export const PatchMeBody = StrictObject({
  name: Type.Optional(UserName),
  email: Type.Optional(Email),
  preferences: Type.Optional(StrictObject({
    units: Type.Optional(preferenceFields.units),
    language: Type.Optional(preferenceFields.language),
    timeZone: Type.Optional(preferenceFields.timeZone)
  }, { description: 'The preferences to change; those left out are kept' }))
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

const TokenScope = Type.Union([Type.Literal('read'), Type.Literal('write')], {
  description: 'read: GET and HEAD only (and event tickets); write: what the user may do, within the family if one is named'
})

const tokenFields = {
  id: Id,
  name: Type.String(),
  scope: TokenScope,
  familyId: Nullable(Id),
  createdAt: Timestamp,
  expiresAt: Nullable(Timestamp),
  lastUsedAt: Nullable(Type.String({ format: 'date-time', description: 'the last request made with it, within a minute; null before the first' }))
}

export const PersonalToken = Type.Object(tokenFields, {
  $id: 'PersonalToken', title: 'PersonalToken', description: 'A personal access token of the user\'s; the token itself is shown only when it is created'
})

export const CreatedPersonalToken = Type.Object({
  ...tokenFields,
  token: Type.String({ description: 'cht_ and 43 characters; shown only here. Send it as Authorization: Bearer <token>', examples: ['cht_4ZrH0mT3sVq8Lw2nXbYd6JcPfKg1uAe9RiOtW5yMz7E'] })
}, { $id: 'CreatedPersonalToken', title: 'CreatedPersonalToken' })

export const CreateTokenBody = StrictObject({
  name: Name(100),
  scope: TokenScope,
  familyId: Type.Optional(Nullable(Id)),
  expiresAt: Type.Optional(Nullable(Timestamp))
})

export const TokenParams = StrictObject({ id: Id })

export const Identity = Type.Object({
  id: Id,
  issuer: Type.String({ description: 'the provider\'s issuer URL' }),
  subject: Type.String({ description: 'who the person is at the provider (its `sub`)' }),
  linkedAt: Timestamp
}, { $id: 'Identity', title: 'Identity', description: 'An identity of the identity provider linked to the account: signing in with it signs in to the account' })

export const IdentityLink = Type.Object({
  url: Type.String({
    description: 'Where the browser goes: `<PUBLIC_URL>/api/auth/oidc/start?redirect=<redirect>&link=<link token>`. Signing in at the provider from there links that identity to the account',
    examples: ['https://health.example.org/api/auth/oidc/start?redirect=%2Fsettings&link=4ZrH0mT3sVq8Lw2nXbYd6JcPfKg1uAe9RiOtW5yMz7E']
  }),
  expiresAt: Timestamp
}, { $id: 'IdentityLink', title: 'IdentityLink', description: 'A one-time link token, in the address that uses it; only its hash is kept' })

export const IdentityLinkBody = StrictObject({
  currentPassword: Secret({ minLength: 1, 'x-max-bytes': 72 }),
  redirect: FrontEndPath
})
