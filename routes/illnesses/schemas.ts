import { Type } from '@sinclair/typebox'
import { FreeText, Id, IsoDate, Nullable, Timestamp } from '../../lib/schemas'

const TemperatureC = Type.Number({ minimum: 34, maximum: 43, maxDecimals: 2 })

export const IllnessFields = {
  startDate: IsoDate,
  endDate: Type.Optional(Nullable(IsoDate)),
  diagnosis: Type.Optional(Nullable(FreeText)),
  symptoms: Type.Optional(Nullable(FreeText)),
  medications: Type.Optional(Nullable(FreeText)),
  temperatureC: Type.Optional(Nullable(TemperatureC)),
  visitId: Type.Optional(Nullable(Id)),
  notes: Type.Optional(Nullable(FreeText))
}

export const Illness = Type.Object({
  id: Id,
  childId: Id,
  startDate: IsoDate,
  endDate: Nullable(IsoDate),
  diagnosis: Nullable(Type.String()),
  symptoms: Nullable(Type.String()),
  medications: Nullable(Type.String()),
  temperatureC: Nullable(Type.Number()),
  visitId: Nullable(Id),
  notes: Nullable(Type.String()),
  status: Type.String({ enum: ['current', 'finished'], description: '`current` while there is no endDate' }),
  createdAt: Timestamp,
  updatedAt: Timestamp
}, { $id: 'Illness', title: 'Illness' })

export const illnessColumns = {
  id: 'id',
  childId: 'child_id',
  startDate: 'start_date',
  endDate: 'end_date',
  diagnosis: 'diagnosis',
  symptoms: 'symptoms',
  medications: 'medications',
  temperatureC: 'temperature_c',
  visitId: 'visit_id',
  notes: 'notes',
  createdAt: 'created_at',
  updatedAt: 'updated_at'
}
