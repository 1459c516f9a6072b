import { Type, type TOptional, type TSchema, type TProperties, type ObjectOptions, type SchemaOptions, type StringOptions, type TInteger } from '@sinclair/typebox'
import { errorCodesByStatus } from './errors'
import { FAMILY_ROLES, type FamilyRole } from './roles'

/** An id: an integer from 1 to 2147483647. */
export const Id = Type.Integer({ minimum: 1, maximum: 2147483647 })

/** An integer as text (a path, a query string, a multipart field): decimal digits, a minus at most, no leading zero. */
export const DECIMAL_INTEGER = /^(0|-?[1-9][0-9]*)$/

/** The dates and times the database holds and gives back as they were sent: years 0001 to 9999. */
export const FIRST_YEAR = 1
export const LAST_YEAR = 9999

/** A calendar date, YYYY-MM-DD, that exists. */
/** The pattern of a date, beside its format: validation messages name it in words. */
export const DATE_PATTERN = '^\\d{4}-\\d{2}-\\d{2}$'
export const IsoDate = Type.String({ format: 'date', pattern: DATE_PATTERN, examples: ['2024-05-17'] })

/** A timestamp, RFC 3339 in UTC. */
export const Timestamp = Type.String({ format: 'date-time' })

/** A family's, child's or record's version: 1 when created, +1 on each change. Its ETag is the version in quotes. */
export const Version = Type.Integer({ minimum: 1, description: '1 when created, +1 on each change; the item\'s ETag is this number in double quotes' })

/** An object that refuses unknown properties. */
export function StrictObject<T extends TProperties> (properties: T, options: ObjectOptions = {}) {
  return Type.Object(properties, { additionalProperties: false, ...options })
}

/**
 * A value that may also be null. Primitive types get a type list rather than
 * anyOf, which keeps validation messages short and serialization fast.
 */
export function Nullable<T extends TSchema> (schema: T) {
  const type = (schema as { type?: unknown }).type
  if (typeof type === 'string' && type !== 'object' && type !== 'array') {
    const copy: Record<string, unknown> = { ...schema, type: [type, 'null'] }
    if (Array.isArray(copy.enum)) copy.enum = [...copy.enum, null]
    return Type.Unsafe<T['static'] | null>(copy)
  }
  return Type.Union([schema, Type.Null()])
}

/** A member's role in a family: one literal each of FAMILY_ROLES. */
export function FamilyRoleSchema (options: SchemaOptions = {}) {
  return Type.Union(FAMILY_ROLES.map(role => Type.Literal(role)), options)
}

/** The same roles as one string enum, the form a nullable role takes (see Nullable). */
export const FamilyRoleEnum = Type.Unsafe<FamilyRole>(Type.String({ enum: [...FAMILY_ROLES] }))

/**
 * A PATCH body's fields: every field of PUT, each optional. A field PUT
 * requires is not nullable, so it can be changed but not cleared.
 */
export function patchFields<T extends TProperties> (fields: T): { [K in keyof T]: TOptional<T[K]> } {
  return Object.fromEntries(Object.entries(fields).map(([name, schema]) => [name, Type.Optional(schema)])) as { [K in keyof T]: TOptional<T[K]> }
}

export const PATCH_RULE = 'An omitted field is kept and null clears it; a field the item must have cannot be cleared. An empty body changes nothing and records no change. If-Match as for PUT.'

/** A password or token: never trimmed, never logged. */
export function Secret (options: StringOptions = {}) {
  return Type.String({ ...options, 'x-secret': true })
}

/** A name: 1 to `max` characters after trimming. */
export function Name (max = 200) {
  return Type.String({ minLength: 1, maxLength: max })
}

/** Free text: at most 10,000 characters. */
export const FreeText = Type.String({ maxLength: 10000 })

const ERROR_CODES = [...errorCodesByStatus()].map(([status, codes]) => `${status} ${codes.join(', ')}`).join('; ')

export const ErrorBody = Type.Object({
  error: Type.String(),
  code: Type.String({ description: `A stable machine code. By status: ${ERROR_CODES}` }),
  details: Type.Object({
    issues: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
    requestId: Type.Optional(Type.String())
  }, { additionalProperties: true })
}, { $id: 'Error', title: 'Error', description: 'The error body of every failed request' })

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid input: VALIDATION_ERROR naming each field in details.issues, or INVALID_BODY for a body that is not valid JSON, nests objects and arrays more than 64 levels deep (details.maxDepth), or is a malformed multipart body',
  401: 'Missing, invalid or expired token',
  403: 'Not allowed',
  404: 'Not found',
  408: 'The request did not arrive within REQUEST_TIMEOUT',
  409: 'Conflict',
  412: 'The item changed since the version in If-Match; details.currentVersion is its version now',
  413: 'Too large',
  414: 'A part of the URL\'s path is too long',
  415: 'Unsupported media type',
  422: 'IDEMPOTENCY_KEY_REUSED: the Idempotency-Key was used with another request; or CHANNEL_UNREACHABLE: a notification channel did not take its test message (details.reason says why)',
  429: 'Too many requests',
  431: 'The URL and headers are larger than allowed',
  500: 'Unexpected failure',
  503: 'Database unavailable'
}

/** Response schemas for error statuses, each the shared error body. */
export function errorResponses (...statuses: number[]): Record<number, TSchema> {
  const responses: Record<number, TSchema> = {}
  for (const status of [...statuses, 500, 503]) {
    responses[status] = Type.Ref('Error', { description: ERROR_DESCRIPTIONS[status] ?? 'Error' })
  }
  return responses
}

/** The 304 of a conditional read. */
export const NotModified = Type.Null({ description: 'Not modified: the ETag in If-None-Match is still current; no body' })

/** A read's answer, documented with the ETag it carries. */
export function WithETag (schema: TSchema, etag: string): TSchema {
  return { ...schema, headers: { ETag: { type: 'string', description: etag } } } as TSchema
}

export const ITEM_ETAG = 'The item\'s version in double quotes, e.g. "3"; send it back in If-None-Match (304 while current) or If-Match (a write that expects it)'
export const CLOCK_ETAG = 'Changes whenever anything this answer could show changes, and is the same otherwise on every instance; send it back in If-None-Match for a 304 while current'

/** The request header of a conditional read. */
export const ConditionalRead = Type.Object({
  'if-none-match': Type.Optional(Type.String({ description: 'An ETag of an earlier answer of the same URL: 304 with no body while it is current' }))
})

/**
 * The request header and the answers of a conditional read of a named object:
 * 200 with its ETag, 304 while the ETag sent is current, and the errors given.
 */
export function conditionalRead (ref: string, etag: string, ...statuses: number[]) {
  return { headers: ConditionalRead, response: { 200: WithETag(Type.Ref(ref), etag), 304: NotModified, ...errorResponses(...statuses) } }
}

/** The answers of a request that answers 204 with no body (`description` says what it did), and the errors given. */
export function noContent (description: string, ...statuses: number[]) {
  return { 204: Type.Null({ description }), ...errorResponses(...statuses) }
}

/** The request header of a write that expects a version. */
export const ConditionalWrite = Type.Object({
  'if-match': Type.Optional(Type.String({ description: 'The version the client last saw, in double quotes ("3"), or *: the write happens only while the item still has that version, otherwise 412 and nothing changes. Without it the write always goes through' }))
})

export const ListMeta = Type.Object({
  total: Type.Integer({ minimum: 0 }),
  limit: Type.Integer({ minimum: 1 }),
  offset: Type.Integer({ minimum: 0 })
}, { $id: 'ListMeta', title: 'ListMeta' })

/** The envelope of every list, `{ data, meta }`, named `<Item>List`. */
export function ListOf (itemId: string) {
  const name = `${itemId}List`
  return Type.Object({ data: Type.Array(Type.Ref(itemId)), meta: Type.Ref('ListMeta') }, { $id: name, title: name })
}

/**
 * A query parameter the request may leave out, which the validator then fills
 * in with its default (ajv's useDefaults): optional in the document, always
 * there for the handler.
 */
function Defaulted (schema: TInteger): TInteger {
  return Type.Optional(schema)
}

/** Pagination parameters of every list; a handler always has both. */
export const Pagination = {
  limit: Defaulted(Type.Integer({ minimum: 1, maximum: 1000, default: 50 })),
  offset: Defaulted(Type.Integer({ minimum: 0, maximum: 2147483647, default: 0 }))
}

/** Schemas registered once on the app and referenced by $id. */
export const sharedSchemas = [ErrorBody, ListMeta]

/** The security of a route that needs a signed-in caller: a bearer token. */
export const BEARER = [{ bearer: [] as string[] }]

/**
 * The OpenAPI operations of one plugin's routes. Each route names its
 * operationId and summary; the plugin's tags and security come with them;
 * the rest of its schema follows, and may name other tags or security.
 */
export function operations (tags: string[], security: Array<Record<string, string[]>> = BEARER) {
  return <S extends object>(operationId: string, summary: string, schema: S) => ({ operationId, tags, summary, security, ...schema })
}
