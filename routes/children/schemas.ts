import { Type } from '@sinclair/typebox'
import { Id, IsoDate, ListOf, Nullable, Pagination, StrictObject, Timestamp, Version, patchFields } from '../../lib/schemas'
import { childFields, GestationalDays, GestationalWeeks, GrowthReference, ScheduleId, Sex } from '../../domain/children'

export const Child = Type.Object({
  id: Id,
  familyId: Id,
  name: Type.String(),
  dateOfBirth: IsoDate,
  sex: Sex,
  avatarUrl: Nullable(Type.String({ description: 'root-relative, /avatars/<name>' })),
  gestationalAgeAtBirthWeeks: Nullable(GestationalWeeks),
  gestationalAgeAtBirthDays: Nullable(GestationalDays),
  growthReference: GrowthReference,
  scheduleId: Nullable(ScheduleId),
  version: Version,
  createdAt: Timestamp,
  updatedAt: Timestamp
}, { $id: 'Child', title: 'Child' })

export const ChildList = ListOf('Child')

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
