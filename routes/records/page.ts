import type { FastifyRequest } from 'fastify'
import type { PendingQuery, Row } from 'postgres'
import type { Db } from '../../db/client'
import { orderBy } from '../../sql/list'
import { listBody } from '../../sql/records'
import type { RegisteredKind } from '../../kinds'

type Fragment = PendingQuery<Row[]>
type Values = Record<string, unknown>

/** A list's page of one kind, as JSON written by the database: its filters, order and page from the query string. */
export function pageOf (sql: Db, spec: RegisteredKind): (request: FastifyRequest) => Fragment {
  const datedBy = spec.dates[0] ?? spec.timestamps?.[0]
  const mainDate = datedBy === undefined ? undefined : spec.columns[datedBy]
  const mainIsTimestamp = spec.dates.length === 0
  return function listPage (request) {
    const query = request.query as Values
    const { limit, offset } = query as { limit: number, offset: number }
    const filters: Fragment[] = []
    if (mainDate !== undefined && mainIsTimestamp) {
      // Dates of a timestamp are UTC dates, whatever time zone the database runs in.
      if (query.from !== undefined) filters.push(sql`and ${sql(mainDate)} >= (${query.from as string}::date)::timestamp at time zone 'UTC'`)
      if (query.to !== undefined) filters.push(sql`and ${sql(mainDate)} < (${query.to as string}::date + 1)::timestamp at time zone 'UTC'`)
    } else if (mainDate !== undefined) {
      if (query.from !== undefined) filters.push(sql`and ${sql(mainDate)} >= ${query.from as string}`)
      if (query.to !== undefined) filters.push(sql`and ${sql(mainDate)} <= ${query.to as string}`)
    }
    for (const [name, filter] of Object.entries(spec.filters ?? {})) {
      const value = query[name] as string | undefined
      if (value === undefined) continue
      const isNull = filter.isNull?.[value]
      if (isNull === undefined) filters.push(sql`and ${sql(filter.column)} = ${value}`)
      else filters.push(isNull ? sql`and ${sql(filter.column)} is null` : sql`and ${sql(filter.column)} is not null`)
    }
    const order = orderBy(sql, (query.sort as string | undefined) ?? spec.defaultSort, spec.sorts)
    const params = request.params as Values
    const ownerId = (spec.parent !== undefined ? params[spec.parent.param] : params.childId ?? query.childId) as number
    return listBody(sql, spec, ownerId, filters, order, limit, offset, spec.derivedSql)
  }
}
