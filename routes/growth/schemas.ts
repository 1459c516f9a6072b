import { Type } from '@sinclair/typebox'
import { GROWTH_REFERENCES } from '../../lib/growth/charts'
import { Id, IsoDate, StrictObject } from '../../lib/schemas'

export const GrowthParams = StrictObject({ childId: Id })

export const GrowthQuery = Type.Object({
  from: Type.Optional(IsoDate),
  to: Type.Optional(IsoDate),
  reference: Type.Optional(Type.String({
    enum: [...GROWTH_REFERENCES],
    description: 'The charts to score on: `who` (WHO 2006 under 60 months, WHO 2007 from 60), `cdc` (CDC 2000: the infant charts under 24 months, the 2–20 year charts from 24), or `auto` (WHO 2006 under 24 months, CDC 2000 from 24). Default: the child\'s growthReference'
  }))
})
