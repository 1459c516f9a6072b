import { Type, type TNumber } from '@sinclair/typebox'
import { INDICATORS, PERCENTILE_KEYS, SD_KEYS } from '../../lib/growth/curves'
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
  step: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: 'Least distance in x between consecutive points of one reference (default: every row)' }))
})

export const GrowthReference = StringEnum(['who-2006', 'who-2007'] as const)

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
