import type { Static, TSchema } from '@sinclair/typebox'
import type { ValidateFunction } from 'ajv'
import { ArchiveProblem } from '../../io/import/zip'
import { buildValidator } from '../../lib/validation'

const compile = buildValidator()
const validators = new Map<TSchema, ValidateFunction>()

/**
 * Checks a value of an archive against a schema, as a body is checked; the
 * first issue is the archive's problem, named by where it is.
 */
export function checkValue<T extends TSchema> (schema: T, value: unknown, where: string): Static<T> {
  let validate = validators.get(schema)
  if (validate === undefined) {
    validate = compile({ schema, httpPart: 'body' } as never) as ValidateFunction
    validators.set(schema, validate)
  }
  if (validate(value)) return value as Static<T>
  const [issue] = validate.errors ?? []
  const at = issue?.instancePath === undefined || issue.instancePath === '' ? '' : ` ${issue.instancePath.slice(1).replaceAll('/', '.')}`
  throw new ArchiveProblem(`${where}:${at} ${issue?.message ?? 'is not valid'}`)
}
