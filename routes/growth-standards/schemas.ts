import { Type, type TNumber } from '@sinclair/typebox'
import { GROWTH_REFERENCES } from '../../lib/growth/charts'
import { INDICATORS, PERCENTILE_KEYS, SD_KEYS } from '../../lib/growth/curves'
import { REFERENCES } from '../../lib/growth/scores'
import { StrictObject } from '../../lib/schemas'

function StringEnum<T extends string> (values: readonly T[], options: Record<string, unknown> = {}) {
  return Type.Unsafe<T>({ type: 'string', enum: [...values], ...options })
}

function NumbersByKey (keys: readonly string[], description: string) {
  const properties: Record<string, TNumber> = Object.fromEntries(keys.map(key => [key, Type.Number()]))
  return Type.Object(properties, { additionalProperties: false, description })
}

export const GrowthStandardParams = StrictObject({
  indicator: StringEnum(INDICATORS)
})

export const GrowthStandardQuery = Type.Object({
  sex: StringEnum(['female', 'male'] as const),
  from: Type.Optional(Type.Number({ minimum: 0, description: 'First x, in the units of x (default: the first row)' })),
  to: Type.Optional(Type.Number({ minimum: 0, description: 'Last x, in the units of x (default: the last row)' })),
  step: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: 'Least distance in x between consecutive points of one reference (default: every row)' })),
  reference: Type.Optional(StringEnum(GROWTH_REFERENCES, {
    description: 'The charts: `who` (the default), `cdc` (CDC 2000: the infant charts under 24 months, the 2 to 20 year charts from 24; CDC\'s points at its own rows) or `auto` (WHO 2006 under 24 months, CDC 2000 from 24), as the growth route scores with them. weight-for-height has no CDC curve: its curve is empty for cdc and auto'
  }))
})

export const GrowthReference = StringEnum(REFERENCES, { description: 'The chart of the point' })

export const GrowthStandardPoint = Type.Object({
  x: Type.Number(),
  reference: GrowthReference,
  l: Type.Number(),
  m: Type.Number(),
  s: Type.Number(),
  sd: NumbersByKey(SD_KEYS, 'The values at −3 to +3 standard deviations'),
  percentile: NumbersByKey(PERCENTILE_KEYS, 'The values at the 3rd, 15th, 50th, 85th and 97th percentiles')
}, { additionalProperties: false })

export const GrowthStandard = Type.Object({
  indicator: StringEnum(INDICATORS),
  sex: StringEnum(['female', 'male'] as const),
  x: StringEnum(['ageDays', 'heightCm'] as const),
  unit: Type.String(),
  source: Type.String(),
  points: Type.Array(GrowthStandardPoint)
}, { $id: 'GrowthStandard', title: 'GrowthStandard', additionalProperties: false })
