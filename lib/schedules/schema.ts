// The shape of a vaccine schedule as the service ships it (schedules/*.json)
// and as GET /api/schedules answers it.
import { Type, type Static } from '@sinclair/typebox'

const strict = { additionalProperties: false } as const

export const AGE_UNITS = ['days', 'weeks', 'months', 'years'] as const
export type AgeUnit = typeof AGE_UNITS[number]

/** An age, or an interval: a whole number of days, weeks, months or years, counted by the calendar. */
export const Age = Type.Object({
  value: Type.Integer({ minimum: 0, maximum: 240 }),
  unit: Type.String({ enum: [...AGE_UNITS] })
}, {
  ...strict,
  description: 'A whole number of days, weeks, months or years, counted from a date by the calendar (a month after 31 January is the last day of February; a year after 29 February is 28 February)'
})
export type Age = { value: number, unit: AgeUnit }

export const ScheduleDose = Type.Object({
  number: Type.Integer({ minimum: 1, maximum: 20, description: 'The dose\'s number in its series, as a vaccine record\'s doseNumber names it' }),
  recommendedAge: Type.String({ minLength: 1, maxLength: 100, description: 'The recommended age as the schedule writes it, e.g. `15–18 months`' }),
  onTime: Type.Object({
    from: Age,
    to: Age
  }, {
    ...strict,
    description: 'The ages in which the dose counts as on time: from the day the child reaches `from` through `to` as the schedule writes it, inclusive (to 15 months lasts until the day before the child is 16 months old; to 0 days is the day of birth)'
  }),
  minIntervalToNext: Type.Union([Age, Type.Null()], { description: 'The minimum interval from this dose to the next of the series; null for the last dose' })
}, strict)

export const ScheduleSeries = Type.Object({
  code: Type.String({ pattern: '^[A-Za-z0-9-]{1,20}$', description: 'The series\' code, as a vaccine record\'s `vaccine` names it, e.g. `DTaP`' }),
  name: Type.String({ minLength: 1, maxLength: 200 }),
  doses: Type.Array(ScheduleDose, { minItems: 1, maxItems: 20, description: 'Numbered 1, 2, 3… in order' })
}, strict)

export const VaccineSchedule = Type.Object({
  id: Type.String({ pattern: '^[a-z0-9-]{1,40}$', description: 'The schedule\'s id, as a child\'s scheduleId names it' }),
  name: Type.String({ minLength: 1, maxLength: 200 }),
  source: Type.Object({
    publisher: Type.String({ minLength: 1 }),
    title: Type.String({ minLength: 1 }),
    edition: Type.String({ minLength: 1 }),
    url: Type.String({ minLength: 1 }),
    intervals: Type.String({ minLength: 1, description: 'Where the minimum intervals come from' })
  }, { ...strict, description: 'Where the schedule comes from' }),
  notes: Type.Array(Type.String({ minLength: 1 }), { description: 'What the schedule leaves out or simplifies, and how its ages read' }),
  series: Type.Array(ScheduleSeries, { minItems: 1 })
}, { ...strict, $id: 'VaccineSchedule', title: 'VaccineSchedule' })

export type ScheduleDose = Omit<Static<typeof ScheduleDose>, 'onTime' | 'minIntervalToNext'> & { onTime: { from: Age, to: Age }, minIntervalToNext: Age | null }
export type ScheduleSeries = Omit<Static<typeof ScheduleSeries>, 'doses'> & { doses: ScheduleDose[] }
export type VaccineSchedule = Omit<Static<typeof VaccineSchedule>, 'series'> & { series: ScheduleSeries[] }
