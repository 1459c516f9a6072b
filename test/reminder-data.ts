// A family's data for the reminders' tests, made through the real routes.
import { call, type App, type Pair } from './helper'

async function created (app: App, pair: Pair, url: string, body: Record<string, unknown>): Promise<any> {
  const res = await call(app, pair, 'POST', url, body)
  if (res.statusCode !== 201) throw new Error(`POST ${url} answered ${res.statusCode}: ${res.body}`)
  return res.json()
}

/** A date (YYYY-MM-DD) as a language writes it in a reminder: "March 5, 2026" in English. */
export function spelled (date: string, language = 'en'): string {
  return new Intl.DateTimeFormat(language, { dateStyle: 'long', timeZone: 'UTC' }).format(new Date(`${date}T00:00:00Z`))
}

/** Today and the days around it, in UTC, as the database counts them. */
export async function utcDays (app: App): Promise<Record<'today' | 'tomorrow' | 'dayAfterTomorrow' | 'yesterday' | 'lastWeek' | 'nextMonth' | 'lastYear' | 'birth', string>> {
  const [row] = await app.sql`
    select d as today, d + 1 as tomorrow, d + 2 as "dayAfterTomorrow", d - 1 as yesterday, d - 7 as "lastWeek", d + 30 as "nextMonth",
      d - 365 as "lastYear", d - 3 * 365 as birth
    from (select (now() at time zone 'UTC')::date as d) today
  `
  return row as Record<'today' | 'tomorrow' | 'dayAfterTomorrow' | 'yesterday' | 'lastWeek' | 'nextMonth' | 'lastYear' | 'birth', string>
}

export async function addChild (app: App, pair: Pair, familyId: number, name: string, dateOfBirth: string): Promise<number> {
  return (await created(app, pair, '/api/children', { name, dateOfBirth, sex: 'female', familyId })).id
}

/** A vaccine dose with its next due date; notes, lot and site that no reminder may tell. */
export async function addVaccine (app: App, pair: Pair, childId: number, body: { name: string, date: string, doseNumber?: number, nextDueDate: string }): Promise<number> {
  return (await created(app, pair, `/api/children/${childId}/medical-events`, {
    type: 'vaccine', description: 'secret vaccine note', lotNumber: 'LOT-SECRET', site: 'left thigh', ...body
  })).id
}

export async function addVisit (app: App, pair: Pair, childId: number, date: string, type = 'wellness'): Promise<number> {
  return (await created(app, pair, `/api/children/${childId}/visits`, { date, type, provider: 'Dr. Secret', notes: 'secret visit note' })).id
}

/** Sets a user's notification settings; fails unless they are taken. */
export async function setChannels (app: App, pair: Pair, channels: unknown[], quietHours: unknown = null): Promise<any> {
  const res = await call(app, pair, 'PUT', '/api/me/notifications', { channels, quietHours })
  if (res.statusCode !== 200) throw new Error(`PUT /api/me/notifications answered ${res.statusCode}: ${res.body}`)
  return res.json()
}
