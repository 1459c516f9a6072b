// A child's fields as a client writes them, and the rule between them that a
// schema cannot state.
import { Type } from '@sinclair/typebox'
import { GROWTH_REFERENCES } from '../lib/growth/charts'
import { IsoDate, Name, Nullable } from '../lib/schemas'
import { scheduleIds } from '../io/schedules'

export const Sex = Type.String({ enum: ['female', 'male', 'other'] })

export const GestationalWeeks = Type.Integer({
  minimum: 22,
  maximum: 44,
  description: 'Gestational age at birth, completed weeks (22 to 44; 40 is term). Below 37, the child was born preterm and growth is scored at the corrected age until 24 months (see the growth route). Null when unknown.'
})

export const GestationalDays = Type.Integer({
  minimum: 0,
  maximum: 6,
  description: 'The days beyond the completed weeks of `gestationalAgeAtBirthWeeks` (0 to 6; 30 weeks and 4 days is 30 and 4). Only with the weeks: days without weeks are a 400. Null when unknown, which counts as 0.'
})

export const GrowthReference = Type.String({
  enum: [...GROWTH_REFERENCES],
  description: 'The growth chart that scores the child\'s growth when a request names none: `who` (WHO 2006 and 2007, the default), `cdc` (CDC 2000), or `auto` (WHO 2006 under 24 months, CDC 2000 from 24 months, as CDC recommends for the United States)'
})

export const ScheduleId = Type.String({
  enum: scheduleIds(),
  description: 'The vaccine schedule the child follows, by its id (GET /api/schedules lists them, e.g. `us-routine`): the due list adds the doses of that schedule not yet recorded, and a vaccine record names its series among the schedule\'s. Null: none. An id the service does not ship is a 400.'
})

/** A child's fields as a client writes them. */
export const childFields = {
  name: Name(200),
  dateOfBirth: IsoDate,
  sex: Sex,
  gestationalAgeAtBirthWeeks: Type.Optional(Nullable(GestationalWeeks)),
  gestationalAgeAtBirthDays: Type.Optional(Nullable(GestationalDays)),
  growthReference: Type.Optional(GrowthReference),
  scheduleId: Type.Optional(Nullable(ScheduleId))
}

export interface Gestation {
  gestationalAgeAtBirthWeeks?: number | null
  gestationalAgeAtBirthDays?: number | null
}

/** Days of gestation are only given with its weeks: the issue when they are not, or null. */
export function gestationIssue (child: Gestation): { path: string, message: string } | null {
  if (child.gestationalAgeAtBirthDays != null && child.gestationalAgeAtBirthWeeks == null) {
    return { path: '/body/gestationalAgeAtBirthDays', message: 'must be null when gestationalAgeAtBirthWeeks is' }
  }
  return null
}
