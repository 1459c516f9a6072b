import type { Db } from '../db/client'
import type { GrowthReference } from '../lib/growth/charts'
import type { GrowthChild, GrowthMeasurement } from '../lib/growth/point'

/**
 * A child's measurements, oldest first, up to an optional inclusive date,
 * from `lookbackDays` before an optional first date and the latest one
 * before those: what the trends of the measurements from that date compare
 * with.
 */
export async function growthMeasurements (db: Db, childId: number, from: string | null, to: string | null, lookbackDays = 0): Promise<GrowthMeasurement[]> {
  const since = from === null
    ? db`'-infinity'::date`
    : db`coalesce(
        (select max(measured_at) from measurements where child_id = ${childId} and measured_at < ${from}::date - ${lookbackDays}::integer),
        ${from}::date - ${lookbackDays}::integer
      )`
  return db<GrowthMeasurement[]>`
    select id, measured_at as "measuredAt", height_cm as "heightCm", weight_kg as "weightKg",
           head_circumference_cm as "headCircumferenceCm"
    from measurements
    where child_id = ${childId}
      and measured_at >= ${since}
      and measured_at <= coalesce(${to}::date, 'infinity'::date)
    order by measured_at, id
  `
}

/** A child as its growth is scored, with its name; undefined when it is gone. */
export async function growthChild (db: Db, childId: number): Promise<(GrowthChild & { name: string, growthReference: GrowthReference }) | undefined> {
  const [row] = await db<Array<GrowthChild & { name: string, growthReference: GrowthReference }>>`
    select name, sex, date_of_birth as "dateOfBirth",
           gestational_age_weeks as "gestationalAgeAtBirthWeeks", gestational_age_days as "gestationalAgeAtBirthDays",
           growth_reference as "growthReference"
    from children where id = ${childId}
  `
  return row
}
