import { Type } from '@sinclair/typebox'
import { FreeText, Id, IsoDate, Name, Nullable, Timestamp } from '../../lib/schemas'

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
  createdAt: Timestamp,
  updatedAt: Timestamp
}, { $id: 'MedicalEvent', title: 'MedicalEvent' })

export const medicalEventColumns = {
  id: 'id',
  childId: 'child_id',
  date: 'date',
  type: 'type',
  name: 'name',
  description: 'description',
  visitId: 'visit_id',
  createdAt: 'created_at',
  updatedAt: 'updated_at'
}
