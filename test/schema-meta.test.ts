import t from 'tap'
import Ajv from 'ajv'
import { build } from './helper'
import { namedSchemas } from '../routes/schemas'
import { VaccineSchedule } from '../lib/schedules/schema'

const PARTS = ['body', 'querystring', 'params', 'headers'] as const

/** JSON Schema's own check of a schema, as the validators would make it at start if they checked. */
function checker (): (schema: unknown) => string | null {
  const ajv = new Ajv({ strict: false })
  return schema => ajv.validateSchema(schema as object) === true ? null : ajv.errorsText(ajv.errors)
}

t.test('every schema of every route, and every named schema, is a valid JSON Schema', async t => {
  const app = await build(t)
  const problemOf = checker()
  const problems: string[] = []
  let checked = 0
  const check = (where: string, schema: unknown): void => {
    if (schema === undefined) return
    checked += 1
    const problem = problemOf(schema)
    if (problem !== null) problems.push(`${where}: ${problem}`)
  }
  for (const route of app.checker.routes) {
    const schema = route.schema ?? {}
    for (const part of PARTS) check(`${route.method} ${route.path} ${part}`, schema[part])
    const answers = (schema.response ?? {}) as Record<string, unknown>
    for (const [status, answer] of Object.entries(answers)) check(`${route.method} ${route.path} ${status}`, answer)
  }
  for (const schema of namedSchemas) check(`named ${String(schema.$id)}`, schema)
  check('the vaccine schedule files\' schema', VaccineSchedule)
  t.same(problems, [], 'no schema is refused by the meta-schema')
  t.ok(checked > 300, `${checked} schemas checked`)
})

t.test('the check refuses a schema JSON Schema does not allow', async t => {
  const problemOf = checker()
  t.equal(problemOf({ type: 'object', properties: { name: { type: 'string', maxLength: 200 } } }), null)
  t.match(problemOf({ type: 'strin' }), /type/)
  t.match(problemOf({ type: 'string', minLength: -1 }), /minLength/)
  t.match(problemOf({ type: 'object', required: 'name' }), /required/)
})
