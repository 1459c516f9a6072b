import { readFileSync } from 'node:fs'
import { Type } from '@sinclair/typebox'
import { bareApp, serve } from './serve'

/**
 * The in-memory floor: the measurements list the service answered, held in
 * memory and serialized with the same response schema on every request. The
 * ceiling of HTTP and serialization on this machine.
 */
async function main (): Promise<void> {
  const file = process.env.PAYLOAD_FILE
  if (file === undefined) throw new Error('PAYLOAD_FILE is required')
  const payload = JSON.parse(readFileSync(file, 'utf8'))
  const app = bareApp()
  app.get('/api/children/:childId/measurements', {
    schema: { response: { 200: Type.Ref('MeasurementList') } }
  }, async () => payload)
  await serve(app)
}

main().catch(error => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`)
  process.exit(1)
})
