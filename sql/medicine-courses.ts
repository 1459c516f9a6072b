import type { Db } from '../db/client'

/** A medicine dose allowed again, of a course that asks for reminders. */
export interface AllowedDose {
  courseId: number
  courseName: string
  childId: number
  /** The child's first name: the first word of its name, all a reminder may say of the child. */
  childFirstName: string
  familyId: number
  nextDoseAllowedAt: Date
}

/**
 * The courses with `remind` whose next dose is allowed at `now` or before,
 * while they run: begun on or before the date of `now` in UTC and not ended
 * before it. Each allowed dose is one item, named by the course and its
 * nextDoseAllowedAt, which moves on with the next dose. Oldest first; read
 * through the index of the courses that remind.
 */
export async function allowedMedicineDoses (db: Db, now: Date = new Date(), limit = 1000, familyIds: number[] | null = null): Promise<AllowedDose[]> {
  const today = now.toISOString().slice(0, 10)
  return db<AllowedDose[]>`
    select m.id as "courseId", m.name as "courseName", c.id as "childId",
           split_part(btrim(c.name), ' ', 1) as "childFirstName", c.family_id as "familyId",
           m.next_dose_allowed_at as "nextDoseAllowedAt"
    from medicine_courses m
    join children c on c.id = m.child_id
    where m.remind and m.next_dose_allowed_at <= ${now}
      ${familyIds === null ? db`` : db`and c.family_id = any(${familyIds}::integer[])`}
      and m.start_date <= ${today}::date and (m.end_date is null or m.end_date >= ${today}::date)
    order by m.next_dose_allowed_at, m.id
    limit ${limit}
  `
}
