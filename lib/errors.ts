import createError from '@fastify/error'

/**
 * The service's own errors, each with its stable code and status. The error
 * handler turns them into the error body of the API contract; `details` may be
 * set on an instance for extra information.
 */
export const errors = {
  validation: createError('VALIDATION_ERROR', '%s', 400),
  invalidBody: createError('INVALID_BODY', '%s', 400),
  unauthorized: createError('UNAUTHORIZED', '%s', 401),
  forbidden: createError('FORBIDDEN', 'Access denied', 403),
  notFound: createError('NOT_FOUND', '%s not found', 404),
  conflict: createError('CONFLICT', '%s', 409),
  payloadTooLarge: createError('PAYLOAD_TOO_LARGE', '%s', 413),
  unsupportedMediaType: createError('UNSUPPORTED_MEDIA_TYPE', '%s', 415),
  serviceUnavailable: createError('SERVICE_UNAVAILABLE', '%s', 503)
}

export type ErrorDetails = Record<string, unknown>

/** Attaches `details` to an error before it is thrown. */
export function withDetails<E extends Error> (error: E, details: ErrorDetails): E {
  return Object.assign(error, { details })
}
