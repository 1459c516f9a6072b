// Calendar arithmetic on YYYY-MM-DD dates, in UTC so that no time zone shifts a day.
import type { Age } from './schema'

const DAY_MS = 86400000

function parts (date: string): [number, number, number] {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date)
  if (match === null) throw new Error(`not a date: ${date}`)
  return [Number(match[1]), Number(match[2]), Number(match[3])]
}

function format (at: Date): string {
  return `${String(at.getUTCFullYear()).padStart(4, '0')}-${String(at.getUTCMonth() + 1).padStart(2, '0')}-${String(at.getUTCDate()).padStart(2, '0')}`
}

/** A date some days later (or earlier, for a negative number). */
export function addDays (date: string, days: number): string {
  const [year, month, day] = parts(date)
  const at = new Date(0)
  at.setUTCFullYear(year, month - 1, day + days)
  return format(at)
}

/** A date some calendar months later: the same day of the month, or the month's last day when it has fewer. */
export function addMonths (date: string, months: number): string {
  const [year, month, day] = parts(date)
  const index = year * 12 + (month - 1) + months
  const targetYear = Math.floor(index / 12)
  const targetMonth = index - targetYear * 12
  const last = new Date(0)
  last.setUTCFullYear(targetYear, targetMonth + 1, 0)
  const at = new Date(0)
  at.setUTCFullYear(targetYear, targetMonth, Math.min(day, last.getUTCDate()))
  return format(at)
}

/** The date an age (or an interval) after a date: the day a child born then reaches it. */
export function addAge (date: string, age: Age): string {
  switch (age.unit) {
    case 'days': return addDays(date, age.value)
    case 'weeks': return addDays(date, age.value * 7)
    case 'months': return addMonths(date, age.value)
    case 'years': return addMonths(date, age.value * 12)
  }
}

/**
 * The last day of an age range that ends at `to` as a schedule writes it,
 * inclusive: through 15 months is the day before the child is 16 months old,
 * through 0 days the day of birth.
 */
export function lastDayThrough (birth: string, to: Age): string {
  return addDays(addAge(birth, { value: to.value + 1, unit: to.unit }), -1)
}

/** Days from one date to another: negative when `to` is before `from`. */
export function daysBetween (from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS)
}
