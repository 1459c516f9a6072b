import fp from 'fastify-plugin'
import type { ErrorObject } from 'ajv'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { NO_ANSWER } from '../db/answers'
import { errors, withDetails } from '../lib/errors'
import { KEY_PATTERN } from '../lib/idempotency'
import { MAX_JSON_DEPTH, nestedDeeperThan } from '../lib/json-depth'
import { DATE_PATTERN } from '../lib/schemas'

export const JSON_BODY_LIMIT = 1024 * 1024
const MAX_ISSUES = 20
export const DATABASE_UNAVAILABLE = 'The database is unavailable; try again shortly'

/** The codes the service answers as they are: its own errors', and those the handler sets itself. */
const OWN_CODES = new Set([
  ...Object.values(errors).map(OwnError => new OwnError().code),
  'ROUTE_NOT_FOUND', 'INTERNAL_ERROR'
])

const CODE_BY_STATUS: Record<number, string> = {
  400: 'VALIDATION_ERROR',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'ROUTE_NOT_FOUND',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'RATE_LIMITED',
  503: 'SERVICE_UNAVAILABLE'
}

/**
 * Connection failures of postgres.js and Node, a server that stopped
 * answering, and PostgreSQL's "cannot serve now" codes (a statement cut by
 * statement_timeout, 57014, among them).
 */
const UNREACHABLE = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN',
  'CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'CONNECTION_ENDED', 'CONNECT_TIMEOUT', NO_ANSWER,
  '57014', '57P01', '57P02', '57P03', '53300'
])

export interface ErrorBody {
  error: string
  code: string
  details: Record<string, unknown>
}

interface Answer {
  status: number
  body: ErrorBody
  /** Seconds after which the client may try again, for Retry-After. */
  retryAfter?: number
}

type AnyError = FastifyError & {
  details?: Record<string, unknown>
  /** Set by withBodyFields. */
  bodyFields?: Record<string, unknown>
  /** Set by withRetryAfter. */
  retryAfter?: number
  severity?: string
  /** PostgreSQL's column and detail, when it gives them. */
  column_name?: string
  detail?: string
  errno?: string
  validationContext?: string
  cause?: unknown
}

interface Issue {
  path: string
  message: string
}

type SchemaError = Pick<ErrorObject, 'keyword' | 'instancePath' | 'params' | 'message'>

const PART: Record<string, string> = { querystring: 'query', params: 'params', body: 'body', headers: 'headers' }

/** Ajv errors as `{ path, message }`, the path naming the request part and the field. */
export function validationIssues (error: AnyError): Issue[] {
  const part = PART[error.validationContext ?? 'body'] ?? 'body'
  return schemaIssues(error.validation ?? [], `/${part}`).slice(0, MAX_ISSUES)
}

/** Ajv errors as `{ path, message }` under a path (`/body`, or a line of a CSV file), each once. */
export function schemaIssues (all: SchemaError[], under: string): Issue[] {
  const specific = all.filter(item => !['anyOf', 'oneOf', 'if'].includes(item.keyword))
  const issues = (specific.length > 0 ? specific : all).map(item => {
    const params = item.params as Record<string, unknown>
    let path = `${under}${item.instancePath}`
    let message = item.message ?? 'is invalid'
    if (item.keyword === 'required') {
      path += `/${String(params.missingProperty)}`
      message = 'is required'
    } else if (item.keyword === 'additionalProperties') {
      path += `/${String(params.additionalProperty)}`
      message = 'is not allowed'
    } else if (item.keyword === 'enum' && Array.isArray(params.allowedValues)) {
      // A nullable enum lists null among its values; null is not a value to name.
      message = `must be one of ${params.allowedValues.filter(value => value !== null).join(', ')}`
    } else if ((item.keyword === 'format' && params.format === 'date') || (item.keyword === 'pattern' && params.pattern === DATE_PATTERN)) {
      // One message for a date, whichever of its rules it breaks, and never a regular expression.
      message = 'must be a date YYYY-MM-DD'
    } else if (item.keyword === 'pattern' && params.pattern === KEY_PATTERN) {
      message = 'must be 1 to 255 printable ASCII characters'
    } else if (item.keyword === 'format' && params.format === 'date-time') {
      message = 'must be a date and time (RFC 3339, e.g. 2024-05-17T08:30:00Z)'
    }
    return { path, message }
  })
  const seen = new Set<string>()
  return issues.filter(issue => {
    const key = `${issue.path} ${issue.message}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

function mebibytes (bytes: number): string {
  return `${Math.round(bytes / 1024 / 1024 * 100) / 100} MiB`
}

/** What PostgreSQL refused, in words, by its error code. */
const REFUSALS: Record<string, string> = {
  '22001': 'a text is longer than the database holds',
  '22003': 'a number is out of the range the database holds',
  '22007': 'a date or time is not valid',
  '22008': 'a date or time is out of the range the database holds',
  '22021': 'a text holds a character the database cannot store',
  '22P02': 'a value is not valid for its field',
  '22P05': 'a text holds a character the database cannot store',
  '23502': 'is required',
  '23503': 'names a record that does not exist',
  '23514': 'a value breaks a rule of the database'
}

function camelCase (column: string): string {
  return column.replace(/_([a-z0-9])/g, (_match, letter: string) => letter.toUpperCase())
}

/**
 * The one issue of a value the database refused: the field, when PostgreSQL
 * names its column (or a foreign key's); otherwise the request part, saying
 * what was refused.
 */
function refusalIssue (error: AnyError, request: FastifyRequest): Issue {
  const code = String(error.code)
  const part = request.body !== undefined && request.body !== null ? 'body' : 'query'
  const column = error.column_name ?? /^Key \(([a-z0-9_]+)\)=/.exec(error.detail ?? '')?.[1]
  const refused = REFUSALS[code] ?? `a value is not allowed (${code})`
  if (column === undefined) return { path: `/${part}`, message: refused }
  return { path: `/${part}/${camelCase(column)}`, message: code.startsWith('22') || code === '23514' ? 'is not allowed by the database' : refused }
}

function refused (error: AnyError, request: FastifyRequest, message: string): Answer {
  return { status: 400, body: { error: message, code: 'VALIDATION_ERROR', details: { issues: [refusalIssue(error, request)] } } }
}

function fromPostgres (error: AnyError, request: FastifyRequest): Answer | null {
  const code = String(error.code ?? '')
  if (error.name !== 'PostgresError' && error.severity === undefined) return null
  if (code === '23505') {
    return { status: 409, body: { error: 'A record with these values already exists', code: 'CONFLICT', details: {} } }
  }
  if (code === '23503') {
    return error.message.startsWith('insert or update')
      ? refused(error, request, 'A referenced record does not exist')
      : { status: 409, body: { error: 'The record is still referenced by other records', code: 'CONFLICT', details: {} } }
  }
  if (code === '40001' || code === '40P01') {
    // Nothing is wrong with the request: Retry-After says so (and keeps it from being kept for its Idempotency-Key).
    return { status: 409, body: { error: 'The request conflicted with another one; try again', code: 'CONFLICT', details: {} }, retryAfter: 1 }
  }
  if (code.startsWith('23') || code.startsWith('22')) {
    return refused(error, request, 'A value is out of range or not allowed')
  }
  return null
}

function isUnreachable (error: AnyError): boolean {
  const code = String(error.code ?? error.errno ?? '')
  if (UNREACHABLE.has(code) || code.startsWith('08')) return true
  const cause = error.cause as AnyError | undefined
  return cause !== undefined && cause !== null && typeof cause === 'object' && UNREACHABLE.has(String(cause.code ?? ''))
}

export function answerFor (error: AnyError, request: FastifyRequest, production: boolean): Answer {
  const code = String(error.code ?? '')
  if (error.validation !== undefined) {
    return { status: 400, body: { error: 'The request is not valid', code: 'VALIDATION_ERROR', details: { issues: validationIssues(error) } } }
  }
  if (OWN_CODES.has(code)) {
    const answer: Answer = { status: error.statusCode ?? 500, body: { ...error.bodyFields, error: error.message, code, details: error.details ?? {} } }
    if (error.retryAfter !== undefined) answer.retryAfter = error.retryAfter
    return answer
  }
  switch (code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { status: 400, body: { error: 'The body is not valid JSON', code: 'INVALID_BODY', details: {} } }
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, body: { error: `The body is larger than ${mebibytes(request.routeOptions.bodyLimit ?? JSON_BODY_LIMIT)}`, code: 'PAYLOAD_TOO_LARGE', details: {} } }
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, body: { error: `Content type ${request.headers['content-type'] ?? '(none)'} is not accepted here`, code: 'UNSUPPORTED_MEDIA_TYPE', details: {} } }
    case 'FST_REQ_FILE_TOO_LARGE':
      return { status: 413, body: { error: 'The file is larger than the upload limit', code: 'PAYLOAD_TOO_LARGE', details: {} } }
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return { status: 415, body: { error: 'The request must be multipart/form-data', code: 'UNSUPPORTED_MEDIA_TYPE', details: {} } }
    case 'FST_FILES_LIMIT':
      return { status: 400, body: { error: 'Only one file may be sent', code: 'INVALID_BODY', details: {} } }
    case 'FST_FIELDS_LIMIT':
    case 'FST_PARTS_LIMIT':
      return { status: 400, body: { error: 'The multipart body has more parts than allowed', code: 'INVALID_BODY', details: {} } }
    case 'FST_ERR_BAD_URL':
      return { status: 400, body: { error: 'The request is not valid', code: 'VALIDATION_ERROR', details: { issues: [{ path: '/params', message: 'must be valid percent-encoded UTF-8' }] } } }
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return { status: 414, body: { error: 'A part of the URL\'s path is too long', code: 'URI_TOO_LONG', details: {} } }
    case 'FST_PROTO_VIOLATION':
    case 'FST_INVALID_JSON_FIELD_ERROR':
      return { status: 400, body: { error: 'The multipart body is malformed', code: 'INVALID_BODY', details: {} } }
  }
  if (error instanceof SyntaxError && error.statusCode === 400) {
    return { status: 400, body: { error: 'The body is not valid JSON', code: 'INVALID_BODY', details: {} } }
  }
  const pg = fromPostgres(error, request)
  if (pg !== null) return pg
  if (isUnreachable(error)) {
    return { status: 503, body: { error: DATABASE_UNAVAILABLE, code: 'SERVICE_UNAVAILABLE', details: {} } }
  }
  const status = error.statusCode
  if (status !== undefined && status >= 400 && status < 500 && CODE_BY_STATUS[status] !== undefined) {
    const details = status === 400 ? { issues: [] } : {}
    return { status, body: { error: error.message, code: CODE_BY_STATUS[status], details } }
  }
  return {
    status: 500,
    body: {
      error: production ? 'Internal server error' : error.message,
      code: 'INTERNAL_ERROR',
      details: { requestId: request.id }
    }
  }
}

export function sendError (reply: FastifyReply, answer: Answer): FastifyReply {
  if (answer.retryAfter !== undefined) reply.header('retry-after', String(answer.retryAfter))
  else if (answer.status === 503) reply.header('retry-after', '5')
  if (answer.status === 401) reply.header('www-authenticate', 'Bearer')
  return reply.code(answer.status).send(answer.body)
}

/**
 * One error handler for every layer, and the not-found handler: each answers
 * with the error body of the API contract. 5xx are logged with the request id;
 * in production their cause never reaches the client.
 */
export default fp(async function errorsPlugin (fastify) {
  const production = fastify.config.production

  fastify.removeAllContentTypeParsers()
  const parseJson = fastify.getDefaultJsonParser('error', 'error')
  // A body nested deeper than any of the API's is refused before it is parsed, and before anything walks it.
  fastify.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: JSON_BODY_LIMIT }, (request, body, done) => {
    const text = body.toString()
    if (text.trim() === '') {
      done(null, undefined)
      return
    }
    if (nestedDeeperThan(text, MAX_JSON_DEPTH)) {
      done(withDetails(new errors.invalidBody(`The body nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep`), { maxDepth: MAX_JSON_DEPTH }), undefined)
      return
    }
    parseJson(request, text, done)
  })

  fastify.setErrorHandler(function (error: AnyError, request, reply) {
    const answer = answerFor(error, request, production)
    if (answer.status === 500) {
      request.log.error({ err: error, reqId: request.id }, 'request failed')
    } else if (answer.status > 500) {
      request.log.warn({ reqId: request.id, code: answer.body.code, cause: error.message }, 'service unavailable')
    }
    return sendError(reply, answer)
  })

  fastify.setNotFoundHandler(function (request, reply) {
    return sendError(reply, {
      status: 404,
      body: { error: `Route ${request.method} ${request.url.split('?')[0].slice(0, 200)} not found`, code: 'ROUTE_NOT_FOUND', details: {} }
    })
  })
}, { name: 'errors', dependencies: ['config'] })
