import webpush from 'web-push'
import { base64urlBytes, pointProblem } from './keys'
import type { VapidKeys } from './vapid'

/** A browser's PushSubscription as its toJSON() gives it. */
export interface PushSubscription {
  endpoint: string
  expirationTime?: number | null
  keys: { p256dh: string, auth: string }
}

/**
 * A message the push service did not take. `status` is the push service's
 * HTTP status (null when it did not answer); `gone` says the subscription no
 * longer exists (404 or 410) and should be dropped; `retryAfter` is the
 * seconds of a 429's or 503's Retry-After.
 */
export class PushError extends Error {
  constructor (message: string, readonly status: number | null = null, readonly gone = false, readonly retryAfter: number | null = null) {
    super(message)
    this.name = 'PushError'
  }
}

/** The longest text one message carries: 4096 bytes of aes128gcm record less its header (86), padding delimiter (1) and tag (16). */
export const MAX_PAYLOAD_BYTES = 3993
/** How long a push service keeps a message for a device that is offline, unless told otherwise: a day. */
export const DEFAULT_TTL_SECONDS = 86_400
export const MAX_ENDPOINT_LENGTH = 2048
const REASON_BYTES = 1024
const REASON_CHARS = 300

/** The bytes of a subscription's key: base64url, padded or not, as browsers write them. */
function keyBytes (value: unknown): Buffer | null {
  return typeof value === 'string' ? base64urlBytes(value.replace(/={1,2}$/, '')) : null
}

/**
 * What is wrong with a push subscription (the browser's PushSubscription
 * JSON), or null: an http or https endpoint, p256dh an uncompressed P-256
 * point, auth 16 bytes.
 */
export function checkSubscription (sub: unknown): string | null {
  if (typeof sub !== 'object' || sub === null || Array.isArray(sub)) return 'must be an object with endpoint and keys'
  const { endpoint, keys } = sub as Record<string, unknown>
  if (typeof endpoint !== 'string') return 'endpoint must be a URL'
  if (endpoint.length > MAX_ENDPOINT_LENGTH) return `endpoint must be at most ${MAX_ENDPOINT_LENGTH} characters`
  let url: URL
  try {
    url = new URL(endpoint)
  } catch {
    return 'endpoint must be a URL'
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'endpoint must be an https or http URL'
  if (url.username !== '' || url.password !== '') return 'endpoint must not hold a user name or password'
  if (typeof keys !== 'object' || keys === null || Array.isArray(keys)) return 'keys must be an object with p256dh and auth'
  const { p256dh, auth } = keys as Record<string, unknown>
  const point = keyBytes(p256dh)
  if (point === null) return 'keys.p256dh must be base64url'
  const pointIssue = pointProblem(point)
  if (pointIssue !== null) return `keys.p256dh ${pointIssue}`
  const secret = keyBytes(auth)
  if (secret === null) return 'keys.auth must be base64url'
  if (secret.length !== 16) return `keys.auth must be 16 bytes, got ${secret.length}`
  return null
}

/** The start of an answer's body, on one line: the push service's reason. */
async function reasonOf (response: Response): Promise<string> {
  const reader = response.body?.getReader()
  if (reader === undefined) return ''
  const chunks: Uint8Array[] = []
  let size = 0
  while (size < REASON_BYTES) {
    const { done, value } = await reader.read()
    if (done) break
    chunks.push(value)
    size += value.length
  }
  await reader.cancel().catch(() => {})
  return Buffer.concat(chunks).toString('utf8').replace(/\s+/g, ' ').trim().slice(0, REASON_CHARS)
}

function retryAfterOf (response: Response): number | null {
  const value = response.headers.get('retry-after')
  return value !== null && /^\d+$/.test(value) ? Number(value) : null
}

function describe (error: unknown): string {
  const cause = (error as { cause?: { code?: string, message?: string } }).cause
  return cause?.code ?? cause?.message ?? (error as Error).message
}

/**
 * Sends one message by Web Push (RFC 8030), encrypted for the subscription
 * (RFC 8291, aes128gcm) and signed with the VAPID keys (RFC 8292), by the
 * web-push library. Resolves once the push service has taken it (2xx);
 * otherwise throws a PushError with the push service's status and text.
 * The whole exchange, answer included, ends after timeoutMs.
 */
export async function sendPush (subscription: PushSubscription, payload: string, vapid: VapidKeys, { timeoutMs, ttlSeconds = DEFAULT_TTL_SECONDS }: { timeoutMs: number, ttlSeconds?: number }): Promise<void> {
  const problem = checkSubscription(subscription)
  if (problem !== null) throw new PushError(`The push subscription is not valid: ${problem}`)
  const size = Buffer.byteLength(payload)
  if (size > MAX_PAYLOAD_BYTES) throw new PushError(`The message is ${size} bytes; Web Push carries at most ${MAX_PAYLOAD_BYTES}`)
  const request = webpush.generateRequestDetails(subscription, payload, {
    vapidDetails: { subject: vapid.subject, publicKey: vapid.publicKey, privateKey: vapid.privateKey },
    TTL: ttlSeconds,
    contentEncoding: 'aes128gcm'
  })
  // fetch counts the body's length itself.
  const headers = Object.entries(request.headers)
    .filter(([name]) => name.toLowerCase() !== 'content-length')
    .map(([name, value]): [string, string] => [name, String(value)])
  const signal = AbortSignal.timeout(timeoutMs)
  let status: number
  let reason: string
  let retryAfter: number | null
  try {
    // A push service answers; it does not send the message elsewhere.
    const response = await fetch(request.endpoint, { method: 'POST', headers, body: request.body, redirect: 'manual', signal })
    if (response.ok) {
      await response.body?.cancel().catch(() => {})
      return
    }
    status = response.status
    retryAfter = retryAfterOf(response)
    reason = await reasonOf(response)
  } catch (error) {
    if (signal.aborted) throw new PushError(`The push service did not answer within ${timeoutMs} ms`)
    throw new PushError(`The push service could not be reached: ${describe(error)}`)
  }
  const gone = status === 404 || status === 410
  const what = gone ? ' (the subscription is gone)' : ''
  throw new PushError(`The push service answered ${status}${what}${reason === '' ? '' : `: ${reason}`}`, status, gone, retryAfter)
}
