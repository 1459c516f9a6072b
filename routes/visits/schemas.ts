import { Type } from '@sinclair/typebox'
import { FreeText, Id, IsoDate, Name, Nullable, StrictObject, Timestamp, Version } from '../../lib/schemas'
import { MeasurementValues } from '../measurements/schemas'

export const VisitType = Type.String({ enum: ['wellness', 'sick', 'injury', 'vision', 'dental'] })

export const VisitFields = {
  date: IsoDate,
  type: VisitType,
  provider: Type.Optional(Nullable(Name(200))),
  notes: Type.Optional(Nullable(FreeText))
}

export const VisitCreateFields = {
  measurement: Type.Optional(Nullable(StrictObject(MeasurementValues, {
    description: 'A measurement taken at the visit: created with the visit\'s date and linked to it'
  })))
}

const visitProperties = {
  id: Id,
  childId: Id,
  date: IsoDate,
  type: VisitType,
  provider: Nullable(Type.String()),
  notes: Nullable(Type.String()),
  version: Version,
  createdAt: Timestamp,
  updatedAt: Timestamp
}

export const Visit = Type.Object(visitProperties, { $id: 'Visit', title: 'Visit' })

export const CreatedVisit = Type.Object({
  ...visitProperties,
  measurement: Type.Optional(Type.Ref('Measurement'))
}, { title: 'CreatedVisit', description: 'The visit, with the measurement created with it when there was one' })

