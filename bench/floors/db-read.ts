import { createSql } from '../../db/client'
import { measurementKind } from '../../kinds/measurements'
import { orderBy } from '../../sql/list'
import { listBody } from '../../sql/records'
import { bareApp, serve } from './serve'

/**
 * The database read floor: the select of the service's measurements list
 * (default sort, newest first, with the total), written as JSON by the
 * database as the service has it written, through postgres.js with the
 * project's type mapping, and no authentication or access check.
 */
async function main (): Promise<void> {
  const url = process.env.DATABASE_URL
  if (url === undefined) throw new Error('DATABASE_URL is required')
  const sql = createSql(url)
  const app = bareApp()

  app.get('/api/children/:childId/measurements', async (request, reply) => {
    const childId = Number((request.params as { childId: string }).childId)
    const limit = Number((request.query as { limit?: string }).limit ?? 50)
    const order = orderBy(sql, measurementKind.defaultSort, measurementKind.sorts)
    const [row] = await sql<{ body: string }[]>`select ${listBody(sql, measurementKind, childId, [], order, limit, 0)} as body`
    return reply.type('application/json; charset=utf-8').send(row.body)
  })
  await serve(app, () => sql.end({ timeout: 5 }))
}

main().catch(error => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`)
  process.exit(1)
})
