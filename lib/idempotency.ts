import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto'

/** How long the first answer of a key is replayed. */
export const KEY_LIFETIME_SECONDS = 24 * 60 * 60

/** An Idempotency-Key: 1 to 255 printable ASCII characters. */
export const KEY_PATTERN = '^[\\x20-\\x7E]{1,255}$'

/** The methods whose requests take an Idempotency-Key. */
export const KEYED_METHODS: readonly string[] = ['POST', 'PUT', 'PATCH', 'DELETE']

/** The headers of an answer that a replay gives again. */
export const REPLAYED_HEADERS = ['content-type', 'etag', 'location'] as const

export interface StoredAnswer {
  status: number
  headers: Partial<Record<typeof REPLAYED_HEADERS[number], string>>
  body: Buffer
}

/**
 * A JSON value with the keys of every object in order, so that equal values
 * give equal text. It recurses: the bodies it reads are at most
 * MAX_JSON_DEPTH levels deep, the JSON parser refuses deeper ones first.
 */
export function canonicalJson (value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(item => canonicalJson(item)).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, item]) => item !== undefined)
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

/**
 * What makes two requests with one key the same request: the method, the
 * path with its query string, and the body as the service read it (a JSON
 * body by its values, whatever their order or spacing; an upload by its
 * fields and the SHA-256 of its file, whatever its multipart boundary). An
 * HMAC under a key of the service's, since a body may hold a password.
 */
export function fingerprint (key: Buffer, method: string, url: string, body: unknown, fileDigest: string | null): string {
  return createHmac('sha256', key).update(canonicalJson([method, url, body ?? null, fileDigest])).digest('hex')
}

/**
 * Whether an answer is kept for its key: one the client can act on is, 2xx
 * and 4xx; one that says to try again is not (401, 408, 429, anything with
 * Retry-After, such as a 409 of transactions that collided), nor a 5xx.
 */
export function keepsAnswer (status: number, retryAfter: boolean): boolean {
  if (status >= 500 || retryAfter) return false
  return status !== 401 && status !== 408 && status !== 429
}

/** The keys of a secret of the service: one seals kept answers, the other makes fingerprints. */
export interface KeyPair {
  seal: Buffer
  print: Buffer
}

/** The keys of the service's secrets (JWT_SECRET, then its previous one): the first is used, all are accepted. */
export function keysOf (secrets: string[]): KeyPair[] {
  const derive = (secret: string, use: string): Buffer => Buffer.from(hkdfSync('sha256', secret, 'child-health idempotency keys', use, 32))
  return secrets.map(secret => ({ seal: derive(secret, 'kept answers'), print: derive(secret, 'request fingerprints') }))
}

const IV_BYTES = 12
const TAG_BYTES = 16

/**
 * A kept answer as stored: AES-256-GCM under a key made from JWT_SECRET,
 * bound to its user and key. An answer may hold a credential shown only once
 * (an invite's token, a calendar feed's link), which the database must not
 * hold in the clear.
 */
export function sealAnswer (key: Buffer, binding: string, answer: StoredAnswer): Buffer {
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  cipher.setAAD(Buffer.from(binding))
  const plain = Buffer.from(JSON.stringify({ headers: answer.headers, body: answer.body.toString('base64') }))
  const sealed = Buffer.concat([cipher.update(plain), cipher.final()])
  return Buffer.concat([iv, cipher.getAuthTag(), sealed])
}

/** A stored answer opened, or null when none of the keys opens it (the secret changed). */
export function openAnswer (keys: KeyPair[], binding: string, status: number, stored: Buffer): StoredAnswer | null {
  for (const { seal: key } of keys) {
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, stored.subarray(0, IV_BYTES))
      decipher.setAAD(Buffer.from(binding))
      decipher.setAuthTag(stored.subarray(IV_BYTES, IV_BYTES + TAG_BYTES))
      const plain = Buffer.concat([decipher.update(stored.subarray(IV_BYTES + TAG_BYTES)), decipher.final()])
      const { headers, body } = JSON.parse(plain.toString()) as { headers: StoredAnswer['headers'], body: string }
      return { status, headers, body: Buffer.from(body, 'base64') }
    } catch {}
  }
  return null
}
