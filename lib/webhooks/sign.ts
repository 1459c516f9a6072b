import { createHmac, randomBytes } from 'node:crypto'

/** How Standard Webhooks writes a secret: this prefix, then base64 of its bytes. */
const SECRET_PREFIX = 'whsec_'

/** A new secret: 32 random bytes. */
export function newSecret (): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64')
}

/**
 * The headers of one delivery per the Standard Webhooks specification: its
 * id, the time of the attempt in seconds, and the signature, the base64
 * HMAC-SHA256 of `<id>.<timestamp>.<body>` keyed with the secret's bytes.
 */
export function signedHeaders (secret: string, id: string, body: Buffer, at: Date): Record<string, string> {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64')
  const timestamp = String(Math.floor(at.getTime() / 1000))
  const signature = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64')
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': timestamp,
    'webhook-signature': `v1,${signature}`
  }
}
