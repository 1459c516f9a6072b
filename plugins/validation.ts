import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import { integerProperties, normalizeBody } from '../lib/validation'

type Schema = Record<string, any>

/** A request's body and query string as the validators take them, following the route's schemas. */
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
    normalizeQuery(request.query as Record<string, unknown>, integerProperties(schema.querystring as Schema | undefined))
  }
}

/**
 * Query strings are trimmed too, integers excepted (they must be written
 * plainly); an empty parameter counts as absent.
 */
function normalizeQuery (query: Record<string, unknown>, integers: string[]): void {
  for (const [key, value] of Object.entries(query)) {
    if (typeof value !== 'string') continue
    const trimmed = value.trim()
    if (trimmed === '') delete query[key]
    else if (!integers.includes(key)) query[key] = trimmed
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
