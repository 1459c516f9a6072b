import { Type } from '@sinclair/typebox'
import { FreeText, Id, IsoDate, Name, Nullable, Timestamp, Version } from '../../lib/schemas'

export const MedicalEventType = Type.String({ enum: ['vaccine', 'procedure', 'medication'] })

export const MedicalEventFields = {
  date: IsoDate,
  type: MedicalEventType,
  name: Name(200),
  description: Type.Optional(Nullable(FreeText)),
  visitId: Type.Optional(Nullable(Id))
}

export const MedicalEvent = Type.Object({
  id: Id,
  childId: Id,
  date: IsoDate,
  type: MedicalEventType,
  name: Type.String(),
  description: Nullable(Type.String()),
  visitId: Nullable(Id),
  version: Version,
  createdAt: Timestamp,
  updatedAt: Timestamp
}, { $id: 'MedicalEvent', title: 'MedicalEvent' })

