import type { PendingQuery, Row } from 'postgres'
import type { Db } from '../db/client'
import { errors, withDetails } from '../lib/errors'
import type { SortFields } from '../kinds/kind'

type Fragment = PendingQuery<Row[]>

/** Which part of a list a page is. */
export interface PageRequest {
  limit: number
  offset: number
}

/** A page of a list, and the number of items in the whole list. */
export interface Page<T> {
  rows: T[]
  total: number
}

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

/**
 * A page read with its list's total in a `total` column, given by `count` (one
 * value: a kept total, or a `(select count(*) …)`): the rows without the
 * column, and the total, counted on its own only for an empty page past the first.
 */
export async function pageWithTotal<T> (
  db: Db, rows: ReadonlyArray<T & { total: number }>, offset: number, count: Fragment
): Promise<Page<T>> {
  const total = await pageTotal(rows, offset, () => db<Array<{ n: unknown }>>`select ${count} as n`)
  return { rows: rows.map(({ total: _total, ...row }) => row as T), total }
}

/** One page of a list, in one statement with its total. */
export interface PageQuery extends PageRequest {
  /** The columns of a row. */
  select: Fragment
  /** The rows of the whole list: `from … where …`. */
  from: Fragment
  order: Fragment
  /** What counts the whole list, when `(select count(*) ${from})` would count more than it needs. */
  count?: Fragment
}

/** A page of a list and its total, read in one round trip. */
export async function readPage<T> (db: Db, query: PageQuery): Promise<Page<T>> {
  const count = query.count ?? db`(select count(*) ${query.from})`
  const rows = await db<Array<T & { total: number }>>`
    select ${query.select}, ${count} as total
    ${query.from}
    ${query.order}
    limit ${query.limit} offset ${query.offset}
  `
  return await pageWithTotal<T>(db, rows, query.offset, count)
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

/** A page of a list already read whole. */
export function pageOfAll<T> (items: readonly T[], { limit, offset }: PageRequest): Page<T> {
  return { rows: items.slice(offset, offset + limit), total: items.length }
}
