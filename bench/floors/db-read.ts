import { Type } from '@sinclair/typebox'
import { createSql } from '../../plugins/db'
import { measurementColumns } from '../../routes/measurements/schemas'
import { bareApp, serve } from './serve'

/**
 * The database read floor: the select of the service's measurements list
 * (default sort, newest first, with the total), through postgres.js with the
 * project's type mapping, and no authentication or access check.
 */
async function main (): Promise<void> {
  const url = process.env.DATABASE_URL
  if (url === undefined) throw new Error('DATABASE_URL is required')
  const sql = createSql(url)
  const columns = Object.values(measurementColumns)
  const fields = Object.entries(measurementColumns)
  const app = bareApp()

  app.get('/api/children/:childId/measurements', {
    schema: { response: { 200: Type.Ref('MeasurementList') } }
  }, async request => {
    const childId = Number((request.params as { childId: string }).childId)
    const limit = Number((request.query as { limit?: string }).limit ?? 50)
    const offset = 0
    const rows = await sql`
      select ${sql(columns)}, count(*) over () as total
      from measurements
      where child_id = ${childId}
      order by measured_at desc, id desc
      limit ${limit} offset ${offset}
    `
    const data = rows.map(row => {
      const item: Record<string, unknown> = {}
      for (const [camel, snake] of fields) item[camel] = row[snake]
      return item
    })
    return { data, meta: { total: rows[0]?.total ?? 0, limit, offset } }
  })
  await serve(app, () => sql.end({ timeout: 5 }))
}

main().catch(error => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`)
  process.exit(1)
})
