import type { Db } from '../db/client'
/** The vaccine doses a child was given, oldest first. */
export async function vaccinesGiven (db: Db, childId: number): Promise<Array<{ name: string, date: string, doseNumber: number | null }>> {
  return await db<Array<{ name: string, date: string, doseNumber: number | null }>>`
    select name, date, dose_number as "doseNumber"
    from medical_events
    where child_id = ${childId} and type = 'vaccine'
    order by date, id
  `
}
