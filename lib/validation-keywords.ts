// The validators' own keywords. Each is a check that answers its errors or
// null, and a keyword that generates a call to it, so that a validator's
// code can be written out at build time (compiled/) and still find the check:
// the generated code requires this module by its path from there.
import type { CodeKeywordDefinition, ErrorObject, KeywordCxt } from 'ajv'
import { DECIMAL_INTEGER, FIRST_YEAR, LAST_YEAR } from './schemas'
import { httpUrlProblem } from './outbound-url'

type Errors = Array<Partial<ErrorObject>> | null

/** Where generated validators find the checks: this module, from compiled/ beside lib/. */
const FROM_COMPILED = '../lib/validation-keywords'

/** Decimal places of a number as written, e.g. 3.456 has 3 and 1e-7 has 7. */
export function decimals (value: number): number {
  const [mantissa, exponent = '0'] = String(value).toLowerCase().split('e')
  const fraction = mantissa.split('.')[1]?.length ?? 0
  return Math.max(0, fraction - Number(exponent))
}

const DATE = /^(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$/

/** Text that Ajv would convert to an integer although it is not written as one (0x1, +1, ' 1', 01, 1e2, 1.0). */
function looseInteger (value: unknown): boolean {
  if (typeof value !== 'string' || value === '' || DECIMAL_INTEGER.test(value)) return false
  const number = Number(value)
  return !Number.isNaN(number) && number % 1 === 0
}

/**
 * The checks, by keyword. A length limit counts UTF-8 bytes (bcrypt reads
 * bytes, not characters). The keywords are OpenAPI extensions (x-...), so
 * that the document stays standard while the validator enforces them.
 */
export const checks: Record<string, (limit: any, data: any, instancePath: string) => Errors> = {
  'x-min-bytes': (limit: number, data: string) => Buffer.byteLength(data, 'utf8') >= limit
    ? null
    : [{ keyword: 'x-min-bytes', message: `must NOT have fewer than ${limit} bytes`, params: { limit } }],
  'x-max-bytes': (limit: number, data: string) => Buffer.byteLength(data, 'utf8') <= limit
    ? null
    : [{ keyword: 'x-max-bytes', message: `must NOT have more than ${limit} bytes`, params: { limit } }],
  'x-max-decimals': (limit: number, data: number) => decimals(data) <= limit
    ? null
    : [{ keyword: 'x-max-decimals', message: `must have at most ${limit} decimal places`, params: { limit } }],
  // PostgreSQL's text cannot hold U+0000.
  'x-no-nul': (_enabled: boolean, data: string) => !data.includes('\u0000')
    ? null
    : [{ keyword: 'x-no-nul', message: 'must not contain a NUL character (U+0000)', params: {} }],
  // A date or time within the years the database holds and gives back as sent; a value that is no date or time is left to its format.
  'x-year-range': (format: string, data: string) => {
    let year: number | undefined
    if (format === 'date') {
      const parts = DATE.exec(data)
      if (parts !== null) year = Number(parts[1])
    } else {
      const time = Date.parse(data)
      if (!Number.isNaN(time)) year = new Date(time).getUTCFullYear()
    }
    if (year === undefined || (year >= FIRST_YEAR && year <= LAST_YEAR)) return null
    const message = format === 'date' ? 'must be a date from 0001-01-01 to 9999-12-31' : 'must be a time from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z'
    return [{ keyword: 'x-year-range', message, params: { format } }]
  },
  'x-http-url': (_enabled: boolean, data: string) => {
    const problem = httpUrlProblem(data)
    return problem === null ? null : [{ keyword: 'x-http-url', message: problem, params: {} }]
  },
  // Integer parameters of a path or query string in plain decimal digits, checked before they are converted.
  'x-decimal-integers': (names: string[], data: Record<string, unknown>, instancePath: string) => {
    const loose = names.filter(name => looseInteger(data[name]))
    if (loose.length === 0) return null
    return loose.map(name => ({ keyword: 'x-decimal-integers', instancePath: `${instancePath}/${name}`, message: 'must be an integer in plain decimal digits', params: {} }))
  }
}

/** A keyword whose generated code calls its check, adding the errors it answers. */
function keyword (name: string, type: CodeKeywordDefinition['type'], schemaType: CodeKeywordDefinition['schemaType'], before?: string): CodeKeywordDefinition {
  return {
    keyword: name,
    type,
    schemaType,
    ...(before !== undefined ? { before } : {}),
    trackErrors: true,
    code (cxt: KeywordCxt) {
      const { _ } = require('ajv') as typeof import('ajv')
      const { strConcat } = require('ajv/dist/compile/codegen') as typeof import('ajv/dist/compile/codegen')
      const { extendErrors } = require('ajv/dist/compile/errors') as typeof import('ajv/dist/compile/errors')
      const { default: N } = require('ajv/dist/compile/names') as typeof import('ajv/dist/compile/names')
      const { gen, it } = cxt
      const check = gen.scopeValue('func', { ref: checks[name], code: _`require(${FROM_COMPILED}).checks[${name}]` })
      const errors = gen.const('errs', _`${check}(${cxt.schemaValue}, ${cxt.data}, ${strConcat(N.instancePath, it.errorPath)})`)
      gen.if(_`${errors} !== null`, () => {
        gen.assign(N.vErrors, _`${N.vErrors} === null ? ${errors} : ${N.vErrors}.concat(${errors})`)
        gen.assign(N.errors, _`${N.vErrors}.length`)
        extendErrors(cxt)
      })
      cxt.ok(_`${errors} === null`)
    }
  }
}

/** The keywords, for an Ajv instance's addKeyword. */
export const keywords = (): CodeKeywordDefinition[] => [
  keyword('x-min-bytes', 'string', 'number'),
  keyword('x-max-bytes', 'string', 'number'),
  keyword('x-max-decimals', 'number', 'number'),
  keyword('x-no-nul', 'string', 'boolean'),
  keyword('x-year-range', 'string', 'string'),
  keyword('x-http-url', 'string', 'boolean'),
  keyword('x-decimal-integers', 'object', 'array', 'properties')
]
