import type { TSchema } from '@sinclair/typebox'
import { buildValidator } from '../lib/validation'
import { UsageError } from './command'

/** The password jobs of the command line, which runs one at a time. */
export const COMMAND_LINE = 'command-line'

/** Checks an account's fields with the rules of the API's own schemas. */
export function checkAccount<T extends Record<string, string>> (schema: TSchema, account: T): T {
  const validate = buildValidator()({ schema, httpPart: 'body' })
  if (validate(account)) return account
  const [issue] = validate.errors ?? []
  const field = issue?.instancePath.slice(1)
  throw new UsageError(`${field === 'password' ? 'the password' : `--${field}`} ${issue?.message ?? 'is invalid'}`)
}
