import { Type, type Static } from '@sinclair/typebox'
import { IPS_PARTS, measurementMapping } from '../lib/fhir'
import { FreeText, Id, IsoDate, Nullable } from '../lib/schemas'
import { storedFields } from './columns'
import { recordSchema } from './record-schema'
import type { Issue } from './rules'
import { kindNames, summaryIn, type RecordKind } from './kind'
import { VisitLink } from './visit-link'

const HeightCm = Type.Number({ minimum: 20, maximum: 250, 'x-max-decimals': 2 })
const WeightKg = Type.Number({ minimum: 0.2, maximum: 250, 'x-max-decimals': 3 })
const HeadCircumferenceCm = Type.Number({ minimum: 15, maximum: 80, 'x-max-decimals': 2 })

/** The values of a measurement, also taken by a visit created with one. */
export const MeasurementValues = {
  heightCm: Type.Optional(Nullable(HeightCm)),
  weightKg: Type.Optional(Nullable(WeightKg)),
  headCircumferenceCm: Type.Optional(Nullable(HeadCircumferenceCm)),
  notes: Type.Optional(Nullable(FreeText))
}

export const MeasurementFields = {
  measuredAt: IsoDate,
  ...MeasurementValues,
  visitId: VisitLink('measuredAt')
}

/** At least one of the three values. */
export function checkValues (values: Record<string, unknown>, path = '/body'): Issue[] {
  const some = ['heightCm', 'weightKg', 'headCircumferenceCm'].some(key => values[key] !== undefined && values[key] !== null)
  return some ? [] : [{ path, message: 'must have at least one of heightCm, weightKg, headCircumferenceCm' }]
}

export const Measurement = recordSchema('Measurement', {
  measuredAt: IsoDate,
  heightCm: Nullable(Type.Number()),
  weightKg: Nullable(Type.Number()),
  headCircumferenceCm: Nullable(Type.Number()),
  visitId: Nullable(Id),
  notes: Nullable(Type.String())
})
export type Measurement = Static<typeof Measurement>

export const measurementKind: RecordKind<'measurement', 'measurements', 'measurements'> = {
  ...kindNames('measurement', 'measurements', 'measurements', 4),
  fhir: measurementMapping,
  summary: summaryIn('growth', IPS_PARTS.vitalSigns, 'Observation'),
  ...storedFields(Measurement, MeasurementFields),
  dates: ['measuredAt'],
  sorts: { measuredAt: 'measured_at', createdAt: 'created_at' },
  defaultSort: '-measuredAt',
  check: body => checkValues(body)
}
