import fp from 'fastify-plugin'
import Ajv, { type ValidateFunction } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifyRequest, FastifySchemaCompiler } from 'fastify'

type Schema = Record<string, any>

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

function createAjv (coerce: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    coerceTypes: coerce ? 'array' : false,
    removeAdditional: false,
    useDefaults: true,
    strict: false,
    addUsedSchema: false
  })
  addFormats(ajv)
  ajv.addKeyword({ keyword: 'x-min-bytes', type: 'string', schemaType: 'number', errors: true, validate: byteLimit('x-min-bytes', (bytes, limit) => bytes >= limit, 'fewer') })
  ajv.addKeyword({ keyword: 'x-max-bytes', type: 'string', schemaType: 'number', errors: true, validate: byteLimit('x-max-bytes', (bytes, limit) => bytes <= limit, 'more') })
  ajv.addKeyword({ keyword: 'x-max-decimals', type: 'number', schemaType: 'number', errors: true, validate: maxDecimals })
  return ajv
}

/**
 * Validators for the whole app: bodies are checked strictly (nothing coerced,
 * unknown properties refused by the schemas), while query strings and path
 * parameters are text and are converted to their types.
 */
export function buildValidator (externalSchemas: Record<string, any> = {}): FastifySchemaCompiler<Schema> {
  const strict = createAjv(false)
  const converting = createAjv(true)
  for (const schema of Object.values(externalSchemas) as Schema[]) {
    strict.addSchema(schema)
    converting.addSchema(schema)
  }
  return ({ schema, httpPart }) => (httpPart === 'body' ? strict : converting).compile(schema)
}

/** A validator for values checked as bodies are, for input that arrives in another shape (the rows of a CSV file). */
export function bodyValidator (schema: Schema): ValidateFunction {
  return createAjv(false).compile(schema)
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

function normalize (request: FastifyRequest): void {
  const schema = request.routeOptions.schema
  if (schema === undefined) return
  const body = schema.body as Schema | undefined
  if (body !== undefined && request.body === undefined && body.type === 'object' && (body.required ?? []).length === 0) {
    // A body whose fields are all optional may be left out entirely.
    request.body = {}
  } else if (body !== undefined && request.body !== undefined && typeof request.body !== 'string') {
    // A text body (a CSV file) is kept as sent: its lines keep their numbers.
    request.body = normalizeBody(request.body, body)
  }
  if (request.query !== null && typeof request.query === 'object') {
    normalizeQuery(request.query as Record<string, unknown>)
  }
}

/** Query strings are trimmed too; an empty parameter counts as absent. */
function normalizeQuery (query: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(query)) {
    if (typeof value !== 'string') continue
    const trimmed = value.trim()
    if (trimmed === '') delete query[key]
    else query[key] = trimmed
  }
}

export default fp(async function validation (fastify) {
  fastify.addHook('preValidation', (request, _reply, done) => {
    try {
      normalize(request)
      done()
    } catch (error) {
      done(error as Error)
    }
  })
}, { name: 'validation' })
