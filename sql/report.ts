import type { Db } from '../db/client'
import type { GrowthReference } from '../lib/growth/charts'

export interface ReportChild {
  name: string
  sex: string
  dateOfBirth: string
  gestationalAgeAtBirthWeeks: number | null
  gestationalAgeAtBirthDays: number | null
  growthReference: GrowthReference
}

/** The child a report is about. */
export async function reportChild (db: Db, childId: number): Promise<ReportChild | undefined> {
  const [row] = await db<ReportChild[]>`
    select name, sex, date_of_birth as "dateOfBirth",
           gestational_age_weeks as "gestationalAgeAtBirthWeeks", gestational_age_days as "gestationalAgeAtBirthDays",
           growth_reference as "growthReference"
    from children where id = ${childId}
  `
  return row
}

/** The vaccine doses a child was given, oldest first. */
export async function vaccinesGiven (db: Db, childId: number): Promise<Array<{ name: string, date: string, doseNumber: number | null }>> {
  return await db<Array<{ name: string, date: string, doseNumber: number | null }>>`
    select name, date, dose_number as "doseNumber"
    from medical_events
    where child_id = ${childId} and type = 'vaccine'
    order by date, id
  `
}
