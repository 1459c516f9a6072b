import createError from '@fastify/error'

/**
 * The service's own errors, each with its stable code and status. The error
 * handler turns them into the error body of the API contract; `details` may be
 * set on an instance for extra information.
 */
export const errors = {
  validation: createError('VALIDATION_ERROR', '%s', 400),
  invalidBody: createError('INVALID_BODY', '%s', 400),
  invalidArchive: createError('INVALID_ARCHIVE', '%s', 400),
  unauthorized: createError('UNAUTHORIZED', '%s', 401),
  forbidden: createError('FORBIDDEN', 'Access denied', 403),
  notFound: createError('NOT_FOUND', '%s not found', 404),
  requestTimeout: createError('REQUEST_TIMEOUT', '%s', 408),
  conflict: createError('CONFLICT', '%s', 409),
  preconditionFailed: createError('PRECONDITION_FAILED', '%s', 412),
  payloadTooLarge: createError('PAYLOAD_TOO_LARGE', '%s', 413),
  uriTooLong: createError('URI_TOO_LONG', '%s', 414),
  unsupportedMediaType: createError('UNSUPPORTED_MEDIA_TYPE', '%s', 415),
  rateLimited: createError('RATE_LIMITED', '%s', 429),
  headersTooLarge: createError('HEADERS_TOO_LARGE', '%s', 431),
  serviceUnavailable: createError('SERVICE_UNAVAILABLE', '%s', 503),
  growthDataMissing: createError('GROWTH_DATA_MISSING', 'The WHO growth reference tables are not installed: put the nine table files in GROWTH_DATA_DIR, where they are picked up within seconds without a restart, or let the service download them at start from WHO (or GROWTH_DATA_URL)', 503),
  pushDisabled: createError('PUSH_DISABLED', 'Web Push is off on this service: it needs VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY', 503),
  inviteInvalid: createError('INVITE_INVALID', 'The invite is not valid', 400),
  tokenExpired: createError('TOKEN_EXPIRED', 'The access token has expired', 401),
  invalidCredentials: createError('INVALID_CREDENTIALS', 'Wrong e-mail or password', 401),
  refreshTokenInvalid: createError('REFRESH_TOKEN_INVALID', 'The refresh token is not valid', 401),
  refreshTokenReused: createError('REFRESH_TOKEN_REUSED', 'The refresh token was already used; the session is revoked', 401),
  passcodeInvalid: createError('PASSCODE_INVALID', '%s', 401),
  accountDisabled: createError('ACCOUNT_DISABLED', 'The account is disabled', 403),
  registrationClosed: createError('REGISTRATION_CLOSED', '%s', 403),
  wrongPassword: createError('WRONG_PASSWORD', 'The current password is wrong', 403),
  passwordLoginDisabled: createError('PASSWORD_LOGIN_DISABLED', 'Password sign-in is off: sign in with the identity provider', 403),
  oidcCodeInvalid: createError('OIDC_CODE_INVALID', 'The sign-in code is not valid: unknown, used or older than a minute', 400),
  emailTaken: createError('EMAIL_TAKEN', 'The e-mail address is already registered', 409),
  passwordNotSet: createError('PASSWORD_NOT_SET', 'The account has no password to prove: an administrator makes its link to an identity (POST /api/admin/users/{id}/identity-link)', 409),
  lastOwner: createError('LAST_OWNER', '%s', 409),
  lastAdmin: createError('LAST_ADMIN', '%s', 409),
  familyNotEmpty: createError('FAMILY_NOT_EMPTY', 'The family still has children', 409),
  alreadyMember: createError('ALREADY_MEMBER', '%s', 409),
  webhookMakerNotOwner: createError('WEBHOOK_MAKER_NOT_OWNER', 'The webhook\'s maker is no longer an owner of the family: make a new webhook to deliver to this URL', 409),
  channelUnreachable: createError('CHANNEL_UNREACHABLE', '%s', 422),
  idempotencyKeyInFlight: createError('IDEMPOTENCY_KEY_IN_FLIGHT', 'A request with this Idempotency-Key is still running; repeat it once that one has answered', 409),
  idempotencyKeyReused: createError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used with another request: another method, path or body', 422),
  batchTooLong: createError('BATCH_TOO_LONG', '%s', 422),
  failedDependency: createError('FAILED_DEPENDENCY', '%s', 424)
}

/** The codes the error handler answers itself, beside the errors above. */
const HANDLER_CODES: Array<[number, string]> = [[404, 'ROUTE_NOT_FOUND'], [500, 'INTERNAL_ERROR']]

/** Every code an error body can carry, by status, for the documentation. */
export function errorCodesByStatus (): Map<number, string[]> {
  const byStatus = new Map<number, string[]>()
  const own: Array<[number, string]> = Object.values(errors).map(OwnError => {
    const error = new OwnError()
    return [error.statusCode ?? 500, error.code]
  })
  for (const [status, code] of [...own, ...HANDLER_CODES].sort((a, b) => a[0] - b[0])) {
    byStatus.set(status, [...(byStatus.get(status) ?? []), code])
  }
  return byStatus
}

export type ErrorDetails = Record<string, unknown>

/** A problem of a request, at the JSON pointer of its part and field: `/body/measuredAt`. */
export interface Issue {
  path: string
  message: string
}

/** The 400 of a request whose values break the rules. */
export function invalidRequest (issues: Issue[]): Error {
  return withDetails(new errors.validation('The request is not valid'), { issues })
}

/** Tells, on a 429 or a 503, when to try again: the error handler answers it with `Retry-After`. */
export function withRetryAfter<E extends Error> (error: E, seconds: number): E {
  return Object.assign(error, { retryAfter: seconds })
}

/** Fields the error's body carries beside `error`, `code` and `details`, where a specification asks for them there. */
export function withBodyFields<E extends Error> (error: E, fields: ErrorDetails): E {
  return Object.assign(error, { bodyFields: fields })
}

/** Attaches `details` to an error before it is thrown. */
export function withDetails<E extends Error> (error: E, details: ErrorDetails): E {
  return Object.assign(error, { details })
}

/** The thing looked up, or a 404 naming it (`what`) when there is none. */
export function found<T> (value: T | undefined, what: string): T {
  if (value === undefined) throw new errors.notFound(what)
  return value
}
