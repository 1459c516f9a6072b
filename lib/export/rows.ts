/**
 * A row with its timestamps as the API writes them, RFC 3339 in UTC. Dates of
 * the calendar are already `YYYY-MM-DD` text and are left as they are.
 */
export function apiRow<T extends object> (row: T): { [K in keyof T]: T[K] extends Date ? string : T[K] } {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(row)) out[key] = value instanceof Date ? value.toISOString() : value
  return out as { [K in keyof T]: T[K] extends Date ? string : T[K] }
}
