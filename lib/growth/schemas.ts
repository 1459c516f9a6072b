// The growth document as childGrowth writes it, in the API's answers: the
// growth route's, and the child's export, which holds it.
import { Type } from '@sinclair/typebox'
import { Id, IsoDate, Nullable } from '../schemas'
import { GROWTH_REFERENCES } from './charts'
import { REFERENCES } from './scores'
import { INDICATORS } from './trends'

export const GrowthScore = Type.Object({
  z: Type.Number(),
  percentile: Type.Number(),
  reference: Type.String({ enum: [...REFERENCES], description: 'The table the score comes from' }),
  flagged: Type.Boolean({ description: 'An implausible value, by the rule of the score\'s reference: WHO\'s, or CDC\'s for biologically implausible values' }),
  crossedLines: Nullable(Type.Integer({
    description: 'The signed number of major centile lines (3rd, 10th, 25th, 50th, 75th, 90th, 97th) between this percentile and the same indicator\'s at the earliest measurement 30 days to 6 months (182.625 days) before; negative downward. A line is crossed when one percentile is below it and the other at or above it. Null when no measurement lies in that window.'
  }))
}, { $id: 'GrowthScore', title: 'GrowthScore' })

const perMonth = (what: string) => Nullable(Type.Number({ description: `${what} per month (30.4375 days), 2 decimals; null when not measured both times` }))

export const GrowthVelocity = Type.Object({
  weightKgPerMonth: perMonth('kg'),
  heightCmPerMonth: perMonth('cm of length or height'),
  headCircumferenceCmPerMonth: perMonth('cm of head circumference'),
  sinceDays: Type.Integer({ description: 'days since the measurement compared with' })
}, { description: 'How fast the values changed since the latest measurement at least 14 days before' })

export const GrowthAlert = Type.Object({
  measurementId: Id,
  indicator: Type.String({ enum: [...INDICATORS] }),
  kind: Type.String({ enum: ['crossing-down', 'crossing-up', 'flagged'], description: '`crossing-down` or `crossing-up` when the score crossed two or more major centile lines, `flagged` for an implausible value' })
})

const score = Nullable(Type.Ref('GrowthScore'))

export const GrowthPoint = Type.Object({
  measurementId: Id,
  measuredAt: IsoDate,
  ageDays: Type.Integer({ description: 'chronological age: measuredAt − dateOfBirth' }),
  ageMonths: Type.Number({ description: 'chronological age, ageDays / 30.4375' }),
  correctedAgeDays: Nullable(Type.Integer({
    description: 'For a child born before 37 weeks and measured before 24 months of chronological age (ageDays under 730.5): ageDays − (280 − gestational age at birth in days). Below 0 before the term date. Null when the age is not corrected.'
  })),
  scoredAt: Type.String({
    enum: ['corrected', 'chronological'],
    description: 'The age the scores are computed at: correctedAgeDays when it is not null, ageDays otherwise'
  }),
  heightCm: Nullable(Type.Number()),
  weightKg: Nullable(Type.Number()),
  headCircumferenceCm: Nullable(Type.Number()),
  bmi: Nullable(Type.Number()),
  weightForAge: score,
  heightForAge: score,
  headCircumferenceForAge: score,
  bmiForAge: score,
  weightForHeight: score,
  velocity: Nullable(GrowthVelocity)
}, { $id: 'GrowthPoint', title: 'GrowthPoint' })

export const Growth = Type.Object({
  childId: Id,
  sex: Type.String({ enum: ['female', 'male', 'other'] }),
  dateOfBirth: IsoDate,
  gestationalAgeAtBirthWeeks: Nullable(Type.Integer({ description: 'as on the child' })),
  gestationalAgeAtBirthDays: Nullable(Type.Integer({ description: 'as on the child' })),
  reference: Type.String({ enum: [...GROWTH_REFERENCES], description: 'The charts asked for: the query\'s reference, or the child\'s growthReference' }),
  source: Type.String(),
  points: Type.Array(Type.Ref('GrowthPoint')),
  alerts: Type.Array(GrowthAlert, { description: 'What a pediatrician looks for, oldest first (by date, then measurement; within one measurement by indicator)' })
}, { $id: 'Growth', title: 'Growth' })
