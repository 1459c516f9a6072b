import { Type } from '@sinclair/typebox'
import { FreeText, Id, IsoDate, Nullable, Timestamp, Version } from '../../lib/schemas'

const TemperatureC = Type.Number({ minimum: 34, maximum: 43, 'x-max-decimals': 2 })

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
  version: Version,
  createdAt: Timestamp,
  updatedAt: Timestamp
}, { $id: 'Illness', title: 'Illness' })

