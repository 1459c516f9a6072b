import type { Db } from '../db/client'
import type { GrowthChild, GrowthMeasurement } from '../lib/growth/point'

/** A child's measurements, oldest first, within optional inclusive date bounds. */
export async function growthMeasurements (db: Db, childId: number, from: string | null, to: string | null): Promise<GrowthMeasurement[]> {
  return db<GrowthMeasurement[]>`
    select id, measured_at as "measuredAt", height_cm as "heightCm", weight_kg as "weightKg",
           head_circumference_cm as "headCircumferenceCm"
    from measurements
    where child_id = ${childId}
      and measured_at >= coalesce(${from}::date, '-infinity'::date)
      and measured_at <= coalesce(${to}::date, 'infinity'::date)
    order by measured_at, id
  `
}

export async function growthChild (db: Db, childId: number): Promise<GrowthChild> {
  const [row] = await db<GrowthChild[]>`
    select sex, date_of_birth as "dateOfBirth",
           gestational_age_weeks as "gestationalAgeAtBirthWeeks", gestational_age_days as "gestationalAgeAtBirthDays"
    from children where id = ${childId}
  `
  return row
}
