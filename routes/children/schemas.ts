import { Type } from '@sinclair/typebox'
import { Id, IsoDate, ListOf, Name, Nullable, Pagination, StrictObject, Timestamp, Version, patchFields } from '../../lib/schemas'

export const Sex = Type.String({ enum: ['female', 'male', 'other'] })

const GestationalWeeks = Type.Integer({
  minimum: 22,
  maximum: 44,
  description: 'Gestational age at birth, completed weeks (22 to 44; 40 is term). Below 37, the child was born preterm and growth is scored at the corrected age until 24 months (see the growth route). Null when unknown.'
})

const GestationalDays = Type.Integer({
  minimum: 0,
  maximum: 6,
  description: 'The days beyond the completed weeks of `gestationalAgeAtBirthWeeks` (0 to 6; 30 weeks and 4 days is 30 and 4). Only with the weeks: days without weeks are a 400. Null when unknown, which counts as 0.'
})

export const Child = Type.Object({
  id: Id,
  familyId: Id,
  name: Type.String(),
  dateOfBirth: IsoDate,
  sex: Sex,
  avatarUrl: Nullable(Type.String({ description: 'root-relative, /avatars/<name>' })),
  gestationalAgeAtBirthWeeks: Nullable(GestationalWeeks),
  gestationalAgeAtBirthDays: Nullable(GestationalDays),
  version: Version,
  createdAt: Timestamp,
  updatedAt: Timestamp
}, { $id: 'Child', title: 'Child' })

export const ChildList = ListOf('Child')

const childFields = {
  name: Name(200),
  dateOfBirth: IsoDate,
  sex: Sex,
  gestationalAgeAtBirthWeeks: Type.Optional(Nullable(GestationalWeeks)),
  gestationalAgeAtBirthDays: Type.Optional(Nullable(GestationalDays))
}

export const CreateChildBody = StrictObject({
  ...childFields,
  familyId: Type.Optional(Nullable(Id))
}, { description: '`familyId` may be left out when the caller belongs to exactly one family' })

export const ReplaceChildBody = StrictObject(childFields)

export const PatchChildBody = StrictObject(patchFields(childFields))

export const ChildParams = StrictObject({ id: Id })

export const ChildListQuery = Type.Object({
  ...Pagination,
  familyId: Type.Optional(Id),
  sort: Type.Optional(Type.String({ description: 'comma-separated fields among name, dateOfBirth, createdAt, each optionally prefixed with - (default name); ties are broken by id' }))
})
