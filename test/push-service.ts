import { createECDH, hkdfSync, randomBytes, createDecipheriv, type ECDH } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Test } from 'tap'
import { importJWK, jwtVerify } from 'jose'

/**
 * A push service on 127.0.0.1 that checks each message as RFC 8030, 8291
 * and 8292 say, and a browser's subscription to it. Written from the RFCs
 * with node:crypto and jose, apart from the web-push library the service
 * uses, so that what it accepts is what a real push service accepts.
 */

/** A browser's side of a subscription: its P-256 key pair and 16-byte auth secret, as PushManager.subscribe() makes them. */
export interface Subscriber {
  ecdh: ECDH
  auth: Buffer
  /** The PushSubscription JSON for an endpoint, as the browser's toJSON() gives it. */
  json: (endpoint: string) => { endpoint: string, expirationTime: null, keys: { p256dh: string, auth: string } }
}

export function subscriber (): Subscriber {
  const ecdh = createECDH('prime256v1')
  ecdh.generateKeys()
  const auth = randomBytes(16)
  return {
    ecdh,
    auth,
    json: endpoint => ({ endpoint, expirationTime: null, keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth: auth.toString('base64url') } })
  }
}

export interface Delivery {
  plaintext: string
  ttl: number
  urgency: string | null
  /** The JWT's claims, checked. */
  claims: { aud: string, exp: number, sub: string }
}

export interface Refusal {
  status: number
  reason: string
}

export interface PushService {
  /** The subscription a browser would give the service's client. */
  subscription: ReturnType<Subscriber['json']>
  origin: string
  received: Delivery[]
  refused: Refusal[]
  /** Answer this instead of 201 once a message has passed every check (a 410 for a subscription gone). */
  failure: { status: number, text: string, headers?: Record<string, string> } | null
  /** Wait this long before answering. */
  delayMs: number
}

class Refused extends Error {
  constructor (readonly status: number, reason: string) {
    super(reason)
  }
}

/** The parameters of `Authorization: vapid t=<JWT>, k=<key>` (RFC 8292 §3). */
function vapidParams (header: string | undefined): { t: string, k: string } {
  const match = /^vapid\s+(.*)$/i.exec(header ?? '')
  if (match === null) throw new Refused(401, 'no vapid Authorization')
  const params = new Map<string, string>()
  for (const part of match[1].split(',')) {
    const at = part.indexOf('=')
    if (at > 0) params.set(part.slice(0, at).trim().toLowerCase(), part.slice(at + 1).trim())
  }
  const t = params.get('t')
  const k = params.get('k')
  if (t === undefined || k === undefined) throw new Refused(401, 'vapid Authorization without t and k')
  return { t, k }
}

/** Checks the VAPID JWT against its key k and the key the subscription was made with (RFC 8292 §2, §4). */
async function checkVapid (header: string | undefined, origin: string, expectedKey: Buffer): Promise<Delivery['claims']> {
  const { t, k } = vapidParams(header)
  const point = Buffer.from(k, 'base64url')
  if (point.length !== 65 || point[0] !== 4) throw new Refused(401, 'k is not an uncompressed P-256 point')
  if (!point.equals(expectedKey)) throw new Refused(403, 'k is not the key the subscription was made with')
  const key = await importJWK({ kty: 'EC', crv: 'P-256', x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33).toString('base64url') }, 'ES256')
  let payload: Record<string, unknown>
  try {
    ({ payload } = await jwtVerify(t, key, { algorithms: ['ES256'], audience: origin, requiredClaims: ['exp', 'sub'] }))
  } catch (error) {
    throw new Refused(401, `JWT: ${(error as Error).message}`)
  }
  const now = Math.floor(Date.now() / 1000)
  const exp = payload.exp as number
  if (exp > now + 24 * 3600) throw new Refused(401, 'JWT: exp more than 24 hours ahead')
  if (typeof payload.sub !== 'string' || !/^(mailto:|https:)/.test(payload.sub)) throw new Refused(401, 'JWT: sub is not a mailto: or https: URL')
  return { aud: payload.aud as string, exp, sub: payload.sub }
}

/** Decrypts an aes128gcm body for the subscriber, as RFC 8291 §3.4 and RFC 8188 say: one record, padded with 0x02. */
export function decrypt (body: Buffer, subscriber: Subscriber): string {
  if (body.length > 4096) throw new Refused(413, 'more than 4096 bytes')
  if (body.length < 21 + 65 + 17) throw new Refused(400, 'shorter than an aes128gcm header and one record')
  const salt = body.subarray(0, 16)
  const rs = body.readUInt32BE(16)
  const idlen = body[20]
  if (idlen !== 65) throw new Refused(400, `keyid of ${idlen} bytes, not the sender's 65-byte key`)
  const senderKey = body.subarray(21, 86)
  const record = body.subarray(86)
  if (rs < 18 || record.length > rs) throw new Refused(400, 'not exactly one record')
  const receiverKey = subscriber.ecdh.getPublicKey()
  let secret: Buffer
  try {
    secret = subscriber.ecdh.computeSecret(senderKey)
  } catch {
    throw new Refused(400, 'the sender\'s key is not a P-256 point')
  }
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), receiverKey, senderKey])
  const ikm = Buffer.from(hkdfSync('sha256', secret, subscriber.auth, keyInfo, 32))
  const cek = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: aes128gcm\0'), 16))
  const nonce = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: nonce\0'), 12))
  const decipher = createDecipheriv('aes-128-gcm', cek, nonce)
  decipher.setAuthTag(record.subarray(record.length - 16))
  let padded: Buffer
  try {
    padded = Buffer.concat([decipher.update(record.subarray(0, record.length - 16)), decipher.final()])
  } catch {
    throw new Refused(400, 'the record does not decrypt with the subscription\'s keys')
  }
  let end = padded.length - 1
  while (end >= 0 && padded[end] === 0) end -= 1
  if (end < 0 || padded[end] !== 2) throw new Refused(400, 'the record does not end with the last record\'s delimiter 0x02')
  return padded.subarray(0, end).toString('utf8')
}

async function bodyOf (request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

/** A push service for one subscription made with the VAPID public key given (base64url); closed at teardown. */
export async function pushService (t: Test, vapidPublicKey: string): Promise<PushService> {
  const browser = subscriber()
  const expectedKey = Buffer.from(vapidPublicKey, 'base64url')
  const state: Omit<PushService, 'subscription' | 'origin'> = { received: [], refused: [], failure: null, delayMs: 0 }

  async function handle (request: IncomingMessage, origin: string): Promise<{ status: number, text: string, headers?: Record<string, string> }> {
    if (request.method !== 'POST' || request.url !== '/push/subscription') throw new Refused(404, 'no such subscription')
    const claims = await checkVapid(request.headers.authorization, origin, expectedKey)
    if (request.headers['content-encoding'] !== 'aes128gcm') throw new Refused(415, 'Content-Encoding is not aes128gcm')
    const ttl = request.headers.ttl
    if (typeof ttl !== 'string' || !/^\d+$/.test(ttl)) throw new Refused(400, 'no TTL')
    const plaintext = decrypt(await bodyOf(request), browser)
    if (state.failure !== null) return state.failure
    const urgency = request.headers.urgency
    state.received.push({ plaintext, ttl: Number(ttl), urgency: typeof urgency === 'string' ? urgency : null, claims })
    return { status: 201, text: '' }
  }

  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    // The push resource's origin, as the sender named it: an address or a name of this host.
    const { port } = server.address() as AddressInfo
    handle(request, `http://${request.headers.host ?? `127.0.0.1:${port}`}`)
      .catch((error): { status: number, text: string, headers?: Record<string, string> } => {
        if (!(error instanceof Refused)) throw error
        state.refused.push({ status: error.status, reason: error.message })
        return { status: error.status, text: error.message }
      })
      .then(async ({ status, text, headers = {} }) => {
        request.resume()
        if (state.delayMs > 0) await new Promise(resolve => setTimeout(resolve, state.delayMs))
        if (response.destroyed) return
        if (status === 201) response.setHeader('location', `/message/${state.received.length}`)
        response.writeHead(status, { 'content-type': 'text/plain', ...headers }).end(text)
      })
      .catch(error => response.destroy(error))
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const origin = `http://127.0.0.1:${port}`
  t.teardown(() => new Promise<void>(resolve => {
    server.closeAllConnections()
    server.close(() => resolve())
  }))
  return Object.assign(state, { subscription: browser.json(`${origin}/push/subscription`), origin })
}
