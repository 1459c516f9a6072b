import { Type } from '@sinclair/typebox'
import { Id, IsoDate, StrictObject } from '../../lib/schemas'

export const GrowthParams = StrictObject({ childId: Id })

export const GrowthQuery = Type.Object({
  from: Type.Optional(IsoDate),
  to: Type.Optional(IsoDate)
})
