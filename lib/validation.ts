// The service's validators: Ajv with its own keywords, strict for bodies and
// converting for query strings and path parameters.
import type Ajv from 'ajv'
import type { ValidateFunction } from 'ajv'
import { reusingCompiled, type CompileRequest, type Precompiled } from './compiled-schemas'
import { keywords } from './validation-keywords'

export { decimals } from './validation-keywords'

type Schema = Record<string, any>

/** Compiles a route's schema for one part of a request: Fastify's schema compiler, in its shape. */
export type SchemaCompiler = (route: { schema: Schema, httpPart?: string }) => ValidateFunction

/** An Ajv instance for bodies (strict) or for paths and query strings (converting); one that keeps its code to write it out, for the build. */
function createAjv (coerce: boolean, keepCode = false): Ajv {
  // Ajv loads with the first schema a process compiles: the built service finds its validators written out.
  const { default: Ajv } = require('ajv') as typeof import('ajv')
  const { default: addFormats } = require('ajv-formats') as typeof import('ajv-formats')
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
    validateSchema: false,
    ...(keepCode ? { code: { source: true } } : {})
  })
  addFormats(ajv)
  for (const keyword of keywords()) ajv.addKeyword(keyword)
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
  const ajvs = ajvsFor(externalSchemas)
  return ({ schema, httpPart }) => ajvs(httpPart).compile(prepared(schema, httpPart))
}

/** The two Ajv instances with the shared schemas, by request part. */
function ajvsFor (externalSchemas: Record<string, any>, keepCode = false): (httpPart: string | undefined) => Ajv {
  const strict = createAjv(false, keepCode)
  const converting = createAjv(true, keepCode)
  for (const schema of Object.values(externalSchemas) as Schema[]) {
    strict.addSchema(withStorableText(schema))
    converting.addSchema(withStorableText(schema))
  }
  return httpPart => httpPart === 'body' ? strict : converting
}

/** The app's validators, each schema compiled once per process for each request part, or found made at build time. */
export function validatorFactory (precompiled?: Precompiled) {
  return reusingCompiled<{ schema: Schema, httpPart?: string }, ValidateFunction>(validators, route => route.httpPart ?? '', 'validator', precompiled)
}

/** The app's validators, compiled in the process. */
export const buildValidator = validatorFactory()

/** A validator's code as a CommonJS module, as the build writes it out. */
export function validatorCode (request: CompileRequest): string {
  const { schema, httpPart } = request.route as { schema: Schema, httpPart?: string }
  const ajv = ajvsFor(request.externalSchemas, true)(httpPart)
  const { default: standaloneCode } = require('ajv/dist/standalone') as typeof import('ajv/dist/standalone')
  return standaloneCode(ajv, ajv.compile(prepared(schema, httpPart)))
}

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
