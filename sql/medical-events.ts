import type { PendingQuery, Row } from 'postgres'
import type { Db } from '../db/client'

/** A vaccine whose next dose is due, as the due list answers it. */
export interface DueVaccine {
  name: string
  dueDate: string
  overdue: boolean
  daysUntilDue: number
  lastDose: { id: number, date: string, doseNumber: number | null }
}

/**
 * The latest dose of each of a child's vaccines (the latest date, then the
 * highest id; names compared case-insensitively after trimming), as rows of
 * medical_events, for a query to read from.
 */
export function latestDoses (db: Db, childIds: PendingQuery<Row[]>): PendingQuery<Row[]> {
  return db`
    select distinct on (e.child_id, lower(btrim(e.name))) e.*
    from medical_events e
    where e.child_id in (${childIds}) and e.type = 'vaccine'
    order by e.child_id, lower(btrim(e.name)), e.date desc, e.id desc
  `
}

/**
 * A page of the vaccines of a child whose latest dose names a next due date,
 * by due date (the overdue ones, oldest first, come first by that order),
 * ties by name; with the total, counted apart.
 */
export async function dueVaccines (
  db: Db, childId: number, today: string, limit: number, offset: number
): Promise<{ rows: DueVaccine[], total: number }> {
  const [row] = await db<Array<{ total: number, data: DueVaccine[] }>>`
    with due as (
      select * from (${latestDoses(db, db`${childId}::integer`)}) latest
      where next_due_date is not null
    )
    select
      (select count(*)::integer from due) as total,
      coalesce(json_agg(json_build_object(
        'name', p.name,
        'dueDate', p.next_due_date,
        'overdue', p.next_due_date < ${today}::date,
        'daysUntilDue', p.next_due_date - ${today}::date,
        'lastDose', json_build_object('id', p.id, 'date', p.date, 'doseNumber', p.dose_number)
      ) order by p.next_due_date, lower(btrim(p.name)), p.id), '[]'::json) as data
    from (
      select * from due
      order by next_due_date, lower(btrim(name)), id
      limit ${limit} offset ${offset}
    ) p
  `
  return { rows: row.data, total: row.total }
}
