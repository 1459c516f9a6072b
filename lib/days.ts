/** The date of a moment in a time zone, YYYY-MM-DD: '2024-05-17'. */
export function dayIn (moment: Date, timeZone: string): string {
  const parts = Object.fromEntries(new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' })
    .formatToParts(moment).map(part => [part.type, part.value]))
  return `${parts.year}-${parts.month}-${parts.day}`
}

/** Today's date in UTC, YYYY-MM-DD: answers that count days from today count them from it. */
export function utcToday (): string {
  return new Date(Date.now()).toISOString().slice(0, 10)
}
