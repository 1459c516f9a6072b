/** Today's date in UTC, YYYY-MM-DD: answers that count days from today count them from it. */
export function utcToday (): string {
  return new Date(Date.now()).toISOString().slice(0, 10)
}
