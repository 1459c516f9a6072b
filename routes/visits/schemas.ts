import { Type } from '@sinclair/typebox'
import { Nullable, StrictObject } from '../../lib/schemas'
import { MeasurementValues } from '../../kinds/measurements'
import { visitProperties } from '../../kinds/visits'

export const VisitCreateFields = {
  measurement: Type.Optional(Nullable(StrictObject(MeasurementValues, {
    description: 'A measurement taken at the visit: created with the visit\'s date and linked to it'
  })))
}

export const CreatedVisit = Type.Object({
  ...visitProperties,
  measurement: Type.Optional(Type.Ref('Measurement'))
}, { title: 'CreatedVisit', description: 'The visit, with the measurement created with it when there was one' })
