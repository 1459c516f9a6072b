import { Type } from '@sinclair/typebox'
import { createSql } from '../../db/client'
import { measurementKind } from '../../kinds/measurements'
import { bareApp, serve } from './serve'

type Body = Record<string, unknown>

const WRITABLE = ['measuredAt', 'heightCm', 'weightKg', 'headCircumferenceCm', 'visitId', 'notes'] as const

/**
 * The database write floor: the service's single insert of a measurement,
 * through postgres.js with the project's type mapping, outside any
 * transaction, and no authentication, access check or body validation. The
 * database records its change as for any write; with CHANGE_TRACKING=off the
 * floor's connections turn that off, to show what change tracking costs.
 */
async function main (): Promise<void> {
  const url = process.env.DATABASE_URL
  if (url === undefined) throw new Error('DATABASE_URL is required')
  const tracking = process.env.CHANGE_TRACKING !== 'off'
  const sql = createSql(url, tracking ? {} : { connection: { 'app.tracking': 'off' } })
  const columns = Object.values(measurementKind.columns)
  const fields = Object.entries(measurementKind.columns)
  const app = bareApp()

  app.post('/api/children/:childId/measurements', {
    schema: { response: { 201: Type.Ref('Measurement') } }
  }, async (request, reply) => {
    const body = request.body as Body
    const row: Body = { child_id: Number((request.params as { childId: string }).childId) }
    for (const field of WRITABLE) row[measurementKind.columns[field]] = body[field] ?? null
    const [inserted] = await sql`
      insert into measurements ${sql(row)}
      returning ${sql(columns)}
    `
    const created: Body = {}
    for (const [camel, snake] of fields) created[camel] = inserted[snake]
    return reply.code(201).header('location', `/api/measurements/${created.id as number}`).send(created)
  })
  await serve(app, () => sql.end({ timeout: 5 }))
}

main().catch(error => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`)
  process.exit(1)
})
