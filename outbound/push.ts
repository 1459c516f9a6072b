import type WebPush from 'web-push'
import type { PushSubscription } from '../lib/channels'
import { postOnce, type PostAnswer } from './post'
import { httpUrlProblem } from '../lib/outbound-url'
import { base64urlBytes, pointProblem } from '../lib/push/keys'
import type { VapidKeys } from '../io/vapid'

export type { PushSubscription }

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

/** web-push, loaded with the first message sent: a service that sends none never loads it. */
function webPush (): typeof WebPush {
  return require('web-push') as typeof WebPush
}

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
  const urlProblem = httpUrlProblem(endpoint)
  if (urlProblem !== null) return `endpoint ${urlProblem}`
  const url = new URL(endpoint)
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

function retryAfterOf (headers: PostAnswer['headers']): number | null {
  const value = headers['retry-after']
  return typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : null
}

/** How a message is sent: the longest it may take, how long the push service keeps it, and the outbound rule's settings (WEBHOOK_ALLOW_PRIVATE, HOST). */
export interface PushOptions {
  timeoutMs: number
  ttlSeconds?: number
  allowPrivate: boolean
  host: string
}

/**
 * Sends one message by Web Push (RFC 8030), encrypted for the subscription
 * (RFC 8291, aes128gcm) and signed with the VAPID keys (RFC 8292) by the
 * web-push library, and POSTed by postOnce, through the outbound rule like
 * every URL a user gives. Resolves once the push service has taken it
 * (2xx); otherwise throws a PushError with the push service's status (never
 * its body), or postOnce's PostError when it was refused or not reached.
 * The whole exchange ends after timeoutMs.
 */
export async function sendPush (subscription: PushSubscription, payload: string, vapid: VapidKeys, options: PushOptions): Promise<void> {
  const problem = checkSubscription(subscription)
  if (problem !== null) throw new PushError(`The push subscription is not valid: ${problem}`)
  const size = Buffer.byteLength(payload)
  if (size > MAX_PAYLOAD_BYTES) throw new PushError(`The message is ${size} bytes; Web Push carries at most ${MAX_PAYLOAD_BYTES}`)
  const request = webPush().generateRequestDetails(subscription, payload, {
    vapidDetails: { subject: vapid.subject, publicKey: vapid.publicKey, privateKey: vapid.privateKey },
    TTL: options.ttlSeconds ?? DEFAULT_TTL_SECONDS,
    contentEncoding: 'aes128gcm'
  })
  const headers = Object.fromEntries(Object.entries(request.headers).map(([name, value]): [string, string] => [name, String(value)]))
  // A push service answers; it does not send the message elsewhere: postOnce follows no redirect.
  const { status, headers: answered } = await postOnce(request.endpoint, {
    headers,
    body: Buffer.from(request.body ?? ''),
    timeoutMs: options.timeoutMs,
    allowPrivate: options.allowPrivate,
    host: options.host,
    what: 'The push service'
  })
  if (status >= 200 && status < 300) return
  const gone = status === 404 || status === 410
  throw new PushError(`The push service answered ${status}${gone ? ' (the subscription is gone)' : ''}`, status, gone, retryAfterOf(answered))
}
