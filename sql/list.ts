import type { PendingQuery, Row } from 'postgres'
import type { Db } from '../db/client'
import { errors, withDetails } from '../lib/errors'

type Fragment = PendingQuery<Row[]>

/** Allowed sort fields: the API's camelCase name and its column. */
export type SortFields = Record<string, string>

function badSort (allowed: SortFields): Error {
  const names = Object.keys(allowed).join(', ')
  return withDetails(new errors.validation('The request is not valid'), {
    issues: [{ path: '/query/sort', message: `must be a comma-separated list of ${names}, each optionally prefixed with -` }]
  })
}

/**
 * An ORDER BY for `sort=-measuredAt,type`: fields checked against the allowed
 * ones, ties broken by id in the direction of the last field, so pages are stable.
 */
export function orderBy (db: Db, sort: string, allowed: SortFields): Fragment {
  const parts = sort.split(',').map(part => part.trim())
  const terms = parts.map(part => {
    const descending = part.startsWith('-')
    const column = allowed[descending ? part.slice(1) : part]
    if (column === undefined || !Object.hasOwn(allowed, descending ? part.slice(1) : part)) throw badSort(allowed)
    return { column, descending }
  })
  if (terms.length === 0 || terms.length > Object.keys(allowed).length) throw badSort(allowed)
  const last = terms[terms.length - 1].descending
  const fragments = terms.map(term => term.descending ? db`${db(term.column)} desc,` : db`${db(term.column)} asc,`)
  return last ? db`order by ${fragments} id desc` : db`order by ${fragments} id asc`
}

export interface Page<T> {
  data: T[]
  meta: { total: number, limit: number, offset: number }
}

/** The list envelope from rows that carry the count of every row as `total`. */
export function page<T extends { total?: number }> (rows: T[], limit: number, offset: number, total?: number): Page<Omit<T, 'total'>> {
  const data = rows.map(({ total: _total, ...rest }) => rest)
  return { data, meta: { total: total ?? rows[0]?.total ?? 0, limit, offset } }
}
