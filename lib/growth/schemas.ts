// The growth document as childGrowth writes it, in the API's answers: the
// growth route's, and the child's export, which holds it.
import { Type } from '@sinclair/typebox'
import { Id, IsoDate, Nullable } from '../schemas'
import { REFERENCES } from './scores'

export const GrowthScore = Type.Object({
  z: Type.Number(),
  percentile: Type.Number(),
  reference: Type.String({ enum: [...REFERENCES], description: 'The table the score comes from' }),
  flagged: Type.Boolean({ description: 'An implausible value, by the rule of the score\'s reference: WHO\'s, or CDC\'s for biologically implausible values' })
}, { $id: 'GrowthScore', title: 'GrowthScore' })

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
  weightForHeight: score
}, { $id: 'GrowthPoint', title: 'GrowthPoint' })

export const Growth = Type.Object({
  childId: Id,
  sex: Type.String({ enum: ['female', 'male', 'other'] }),
  dateOfBirth: IsoDate,
  gestationalAgeAtBirthWeeks: Nullable(Type.Integer({ description: 'as on the child' })),
  gestationalAgeAtBirthDays: Nullable(Type.Integer({ description: 'as on the child' })),
  source: Type.String(),
  points: Type.Array(Type.Ref('GrowthPoint'))
}, { $id: 'Growth', title: 'Growth' })
