// The service's validators: Ajv with its own keywords, strict for bodies and
// converting for query strings and path parameters.
import Ajv, { type ValidateFunction } from 'ajv'
import addFormats from 'ajv-formats'
import type { DataValidationCxt } from 'ajv/dist/types'
import { DECIMAL_INTEGER, FIRST_YEAR, LAST_YEAR } from './schemas'
import { reusingCompiled } from './compiled-schemas'
import { httpUrlKeyword } from './outbound-url'

type Schema = Record<string, any>

/** Compiles a route's schema for one part of a request: Fastify's schema compiler, in its shape. */
export type SchemaCompiler = (route: { schema: Schema, httpPart?: string }) => ValidateFunction

/**
 * A length limit in UTF-8 bytes (bcrypt reads bytes, not characters). The
 * keywords of the project's own are OpenAPI extensions (x-...), so that the
 * document stays standard while the validator enforces them.
 */
function byteLimit (keyword: string, ok: (bytes: number, limit: number) => boolean, word: string) {
  const validate = (limit: number, data: string): boolean => {
    if (ok(Buffer.byteLength(data, 'utf8'), limit)) return true
    validate.errors = [{ keyword, message: `must NOT have ${word} than ${limit} bytes`, params: { limit } }]
    return false
  }
  validate.errors = [] as object[]
  return validate
}

/** Decimal places of a number as written, e.g. 3.456 has 3 and 1e-7 has 7. */
export function decimals (value: number): number {
  const [mantissa, exponent = '0'] = String(value).toLowerCase().split('e')
  const fraction = mantissa.split('.')[1]?.length ?? 0
  return Math.max(0, fraction - Number(exponent))
}

function maxDecimals (limit: number, data: number): boolean {
  if (decimals(data) <= limit) return true
  maxDecimals.errors = [{ keyword: 'x-max-decimals', message: `must have at most ${limit} decimal places`, params: { limit } }]
  return false
}
maxDecimals.errors = [] as object[]

/** PostgreSQL's text cannot hold U+0000. */
function noNul (_enabled: boolean, data: string): boolean {
  if (!data.includes('\u0000')) return true
  noNul.errors = [{ keyword: 'x-no-nul', message: 'must not contain a NUL character (U+0000)', params: {} }]
  return false
}
noNul.errors = [] as object[]

const DATE = /^(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$/

/**
 * A date or time within the years the database holds and gives back as sent.
 * A value that is not a date or time at all is left to its format.
 */
function yearRange (format: string, data: string): boolean {
  let year: number | undefined
  if (format === 'date') {
    const parts = DATE.exec(data)
    if (parts !== null) year = Number(parts[1])
  } else {
    const time = Date.parse(data)
    if (!Number.isNaN(time)) year = new Date(time).getUTCFullYear()
  }
  if (year === undefined || (year >= FIRST_YEAR && year <= LAST_YEAR)) return true
  const message = format === 'date' ? 'must be a date from 0001-01-01 to 9999-12-31' : 'must be a time from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z'
  yearRange.errors = [{ keyword: 'x-year-range', message, params: { format } }]
  return false
}
yearRange.errors = [] as object[]

/** Text that Ajv would convert to an integer although it is not written as one (0x1, +1, ' 1', 01, 1e2, 1.0). */
function looseInteger (value: unknown): boolean {
  if (typeof value !== 'string' || value === '' || DECIMAL_INTEGER.test(value)) return false
  const number = Number(value)
  return !Number.isNaN(number) && number % 1 === 0
}

/**
 * Integer parameters of a path or query string as plain decimal digits. The
 * check runs on the object, before its properties are converted, since the
 * conversion would take any of JavaScript's ways of writing a number.
 */
function decimalIntegers (names: string[], data: Record<string, unknown>, _parent?: unknown, context?: DataValidationCxt): boolean {
  const loose = names.filter(name => looseInteger(data[name]))
  if (loose.length === 0) return true
  decimalIntegers.errors = loose.map(name => ({
    keyword: 'x-decimal-integers',
    instancePath: `${context?.instancePath ?? ''}/${name}`,
    message: 'must be an integer in plain decimal digits',
    params: {}
  }))
  return false
}
decimalIntegers.errors = [] as object[]

function createAjv (coerce: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    coerceTypes: coerce ? 'array' : false,
    removeAdditional: false,
    useDefaults: true,
    // A oneOf with a discriminator (a channel's type) is checked against the branch its tag names only.
    discriminator: true,
    strict: false,
    addUsedSchema: false,
    // The schemas are the service's own and never change while it runs: the
    // tests check each against JSON Schema's meta-schema (schema-meta.test.ts),
    // so a start does not check them again, which was most of its time.
    validateSchema: false
  })
  addFormats(ajv)
  ajv.addKeyword({ keyword: 'x-min-bytes', type: 'string', schemaType: 'number', errors: true, validate: byteLimit('x-min-bytes', (bytes, limit) => bytes >= limit, 'fewer') })
  ajv.addKeyword({ keyword: 'x-max-bytes', type: 'string', schemaType: 'number', errors: true, validate: byteLimit('x-max-bytes', (bytes, limit) => bytes <= limit, 'more') })
  ajv.addKeyword({ keyword: 'x-max-decimals', type: 'number', schemaType: 'number', errors: true, validate: maxDecimals })
  ajv.addKeyword({ keyword: 'x-no-nul', type: 'string', schemaType: 'boolean', errors: true, validate: noNul })
  ajv.addKeyword({ keyword: 'x-year-range', type: 'string', schemaType: 'string', errors: true, validate: yearRange })
  ajv.addKeyword({ keyword: 'x-http-url', type: 'string', schemaType: 'boolean', errors: true, validate: httpUrlKeyword })
  ajv.addKeyword({ keyword: 'x-decimal-integers', type: 'object', schemaType: 'array', errors: true, before: 'properties', validate: decimalIntegers })
  return ajv
}

function takes (schema: Schema, type: string): boolean {
  return schema.type === type || (Array.isArray(schema.type) && schema.type.includes(type))
}

function isSchema (value: unknown): value is Schema {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}

const SUBSCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']
const SUBSCHEMA_LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems']
const SUBSCHEMAS = ['additionalProperties', 'items', 'not', 'if', 'then', 'else', 'contains', 'propertyNames']

/**
 * A copy of a schema in which every string refuses what the database cannot
 * store: NUL characters, and dates and times outside the years it holds. The
 * route's own schema, which the OpenAPI document is made from, is left as it is.
 */
export function withStorableText (schema: Schema): Schema {
  if (!isSchema(schema)) return schema
  const copy: Schema = { ...schema }
  for (const key of SUBSCHEMA_MAPS) {
    if (isSchema(copy[key])) copy[key] = Object.fromEntries(Object.entries(copy[key]).map(([name, sub]) => [name, withStorableText(sub as Schema)]))
  }
  for (const key of SUBSCHEMA_LISTS) {
    if (Array.isArray(copy[key])) copy[key] = copy[key].map(withStorableText)
  }
  for (const key of SUBSCHEMAS) {
    if (Array.isArray(copy[key])) copy[key] = copy[key].map(withStorableText)
    else if (isSchema(copy[key])) copy[key] = withStorableText(copy[key])
  }
  if (takes(copy, 'string')) {
    copy['x-no-nul'] = true
    if (copy.format === 'date' || copy.format === 'date-time') copy['x-year-range'] = copy.format
  }
  return copy
}

const integerNames = new WeakMap<Schema, string[]>()

/** The integer properties of a path's or query string's schema. */
export function integerProperties (schema: Schema | undefined): string[] {
  if (!isSchema(schema) || !isSchema(schema.properties)) return []
  let names = integerNames.get(schema)
  if (names === undefined) {
    names = Object.entries(schema.properties as Record<string, Schema>).filter(([, property]) => isSchema(property) && takes(property, 'integer')).map(([name]) => name)
    integerNames.set(schema, names)
  }
  return names
}

/** The schema a request part is validated with: the route's, with the service's own rules added. */
function prepared (schema: Schema, httpPart: string | undefined): Schema {
  if (httpPart === 'headers') return schema
  if (httpPart === 'params') {
    const names = integerProperties(schema)
    return names.length === 0 ? schema : { ...schema, 'x-decimal-integers': names }
  }
  const storable = withStorableText(schema)
  const names = httpPart === 'querystring' ? integerProperties(schema) : []
  return names.length === 0 ? storable : { ...storable, 'x-decimal-integers': names }
}

/**
 * Validators for the whole app: bodies are checked strictly (nothing coerced,
 * unknown properties refused by the schemas), while query strings and path
 * parameters are text and are converted to their types.
 */
function validators (externalSchemas: Record<string, any> = {}): SchemaCompiler {
  const strict = createAjv(false)
  const converting = createAjv(true)
  for (const schema of Object.values(externalSchemas) as Schema[]) {
    strict.addSchema(withStorableText(schema))
    converting.addSchema(withStorableText(schema))
  }
  return ({ schema, httpPart }) => (httpPart === 'body' ? strict : converting).compile(prepared(schema, httpPart))
}

/** The app's validators, each schema compiled once per process for each request part. */
export const buildValidator = reusingCompiled<{ schema: Schema, httpPart?: string }, ValidateFunction>(validators, route => route.httpPart ?? '')

/** A validator for values checked as bodies are, for input that arrives in another shape (the rows of a CSV file). */
export function bodyValidator (schema: Schema): ValidateFunction {
  return createAjv(false).compile(withStorableText(schema))
}

/** Whether a schema takes null: an empty string may stand for null only there. */
function allowsNull (schema: Schema | undefined): boolean {
  if (schema === undefined) return true
  if (schema.type === 'null' || (Array.isArray(schema.type) && schema.type.includes('null'))) return true
  return Array.isArray(schema.anyOf) && schema.anyOf.some((branch: Schema) => allowsNull(branch))
}

function pick (schema: Schema | undefined, value: unknown): Schema | undefined {
  if (schema?.anyOf === undefined) return schema
  const kind = Array.isArray(value) ? 'array' : typeof value
  return schema.anyOf.find((branch: Schema) => branch.type === kind || (Array.isArray(branch.type) && branch.type.includes(kind))) ?? schema
}

/**
 * Trims every string of a body (secrets, marked `x-secret`, excepted) and turns an
 * empty optional string into null where the field takes null, following the
 * route's own schema.
 */
export function normalizeBody (value: unknown, schema: Schema | undefined, required = true): unknown {
  schema = pick(schema, value)
  if (schema === undefined) return value
  if (typeof value === 'string') {
    if (schema['x-secret'] === true) return value
    const trimmed = value.trim()
    return trimmed === '' && !required ? null : trimmed
  }
  if (Array.isArray(value)) {
    return value.map(item => normalizeBody(item, schema.items, true))
  }
  if (value !== null && typeof value === 'object' && schema.properties !== undefined) {
    const object = value as Record<string, unknown>
    const requiredKeys: string[] = schema.required ?? []
    for (const key of Object.keys(object)) {
      if (Object.hasOwn(schema.properties, key)) {
        // A field that cannot be null keeps its empty string, and fails as too short (a PATCH's optional name, say).
        const property = schema.properties[key]
        object[key] = normalizeBody(object[key], property, requiredKeys.includes(key) || !allowsNull(property))
      }
    }
  }
  return value
}
