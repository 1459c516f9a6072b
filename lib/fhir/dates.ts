const DAY_MS = 86400000

function utcDay (date: string): number {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date)
  if (match === null) throw new RangeError(`Not a date: ${date}`)
  return new Date(0).setUTCFullYear(Number(match[1]), Number(match[2]) - 1, Number(match[3])) / DAY_MS
}

/** Whole days from one `YYYY-MM-DD` date to another, whatever the time zone. */
export function daysBetween (from: string, to: string): number {
  return utcDay(to) - utcDay(from)
}
