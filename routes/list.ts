import type { Page, PageRequest } from '../sql/list'

/** What a list route answers: a page of the list and where it stands in it. */
export interface ListAnswer<T> {
  data: T[]
  meta: { total: number, limit: number, offset: number }
}

/**
 * Answers a list route: `read` reads the page the query asks for (its
 * `limit` and `offset`), answered with the whole list's total.
 */
export async function pageOf<T> (query: PageRequest, read: (page: PageRequest) => PromiseLike<Page<T>>): Promise<ListAnswer<T>> {
  const { limit, offset } = query
  const { rows, total } = await read({ limit, offset })
  return { data: rows, meta: { total, limit, offset } }
}
