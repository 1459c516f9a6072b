import type { SortKey } from '../../sql/admin'

/**
 * Reads a `sort` parameter the schema has already checked against the allowed
 * fields; a field named twice counts once, where it first appears.
 */
export function parseSort<F extends string> (value: string | undefined, fallback: Array<SortKey<F>>): Array<SortKey<F>> {
  if (value === undefined) return fallback
  const keys: Array<SortKey<F>> = []
  for (const item of value.split(',')) {
    const descending = item.startsWith('-')
    const field = (descending ? item.slice(1) : item) as F
    if (!keys.some(key => key.field === field)) keys.push({ field, descending })
  }
  return keys
}
