import type { PendingQuery, Row } from 'postgres'
import type { Db } from '../db/client'
import { errors, withDetails } from '../lib/errors'
import type { SortFields } from '../kinds/kind'

type Fragment = PendingQuery<Row[]>

/**
 * A list's total, which its page carries in a `total` column. An empty page
 * carries none: the first page's emptiness is the total, and past it the
 * list is counted on its own (`count` answers one row with `n`).
 */
export async function pageTotal (
  rows: ReadonlyArray<{ total: number }>, offset: number, count: () => PromiseLike<ReadonlyArray<{ n: unknown }>>
): Promise<number> {
  if (rows.length > 0) return rows[0].total
  if (offset === 0) return 0
  const [row] = await count()
  return Number(row.n)
}

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
