import t from 'tap'
import { readFileSync, statSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { Writable } from 'node:stream'
import webpush from 'web-push'
import { importJWK, SignJWT } from 'jose'
import { buildApp } from '../app'
import { PostError } from '../outbound/post'
import { checkSubscription, MAX_PAYLOAD_BYTES, PushError, sendPush } from '../outbound/push'
import { vapidKeys, vapidPairProblem, VAPID_FILE, type VapidKeys } from '../io/vapid'
import { bearer, build, register, tempDir, testConfig, testDatabase } from './helper'
import { pushService, subscriber, type PushService } from './push-service'

const SUBJECT = 'mailto:ops@example.org'
/** The test's push service is on 127.0.0.1: the outbound rule lets it through only with private addresses allowed. */
const LOCAL = { allowPrivate: true, host: '127.0.0.1' }

function newKeys (): VapidKeys {
  return { ...webpush.generateVAPIDKeys(), subject: SUBJECT }
}

async function publicKeyOf (app: Awaited<ReturnType<typeof build>>): Promise<string> {
  const user = await register(app)
  const res = await app.inject({ method: 'GET', url: '/api/push/public-key', headers: bearer(user.accessToken) })
  if (res.statusCode !== 200) throw new Error(`public-key answered ${res.statusCode}: ${res.body}`)
  return res.json().publicKey
}

/** The error a send ends with: a PushError when the push service answered no, a PostError when none answered or the address was refused. */
async function refusal<E extends Error = PushError> (promise: Promise<unknown>, type: new (...args: any[]) => E = PushError as any): Promise<E> {
  try {
    await promise
  } catch (error) {
    if (error instanceof type) return error
    throw error
  }
  throw new Error('the message was taken')
}

/** Posts a message as built by hand, to see what the push service makes of it. */
async function post (service: PushService, headers: Record<string, string>, body: Buffer): Promise<number> {
  const res = await fetch(service.subscription.endpoint, { method: 'POST', headers, body })
  await res.arrayBuffer()
  return res.status
}

function signedHeaders (service: PushService, keys: VapidKeys, payload = 'hello'): { headers: Record<string, string>, body: Buffer } {
  const details = webpush.generateRequestDetails(service.subscription, payload, { vapidDetails: keys, TTL: 60, contentEncoding: 'aes128gcm' })
  const headers = Object.fromEntries(Object.entries(details.headers).filter(([name]) => name !== 'Content-Length').map(([name, value]) => [name, String(value)]))
  return { headers, body: details.body }
}

t.test('the public-key route answers the configured key, to signed-in users only', async t => {
  const keys = newKeys()
  const app = await build(t, { env: { VAPID_PUBLIC_KEY: keys.publicKey, VAPID_PRIVATE_KEY: keys.privateKey } })
  const publicKey = await publicKeyOf(app)
  t.equal(publicKey, keys.publicKey, 'the configured key')
  t.match(publicKey, /^[A-Za-z0-9_-]+$/, 'base64url without padding')
  const point = Buffer.from(publicKey, 'base64url')
  t.equal(point.length, 65, 'an uncompressed P-256 point')
  t.equal(point[0], 4)
  const anonymous = await app.inject({ method: 'GET', url: '/api/push/public-key' })
  t.equal(anonymous.statusCode, 401)
  t.equal(anonymous.json().code, 'UNAUTHORIZED')
})

t.test('keys made outside production are kept under DATA_DIR and survive a restart', async t => {
  const dir = tempDir(t, 'child-health-vapid-')
  const first = await build(t, { env: { DATA_DIR: dir } })
  const key = await publicKeyOf(first)
  await first.close()
  const file = path.join(dir, VAPID_FILE)
  t.equal(statSync(file).mode & 0o777, 0o600, 'readable by its owner only')
  const stored = JSON.parse(readFileSync(file, 'utf8'))
  t.equal(stored.publicKey, key)
  t.equal(vapidPairProblem(stored.publicKey, stored.privateKey), null, 'a matching pair')
  const second = await build(t, { env: { DATA_DIR: dir } })
  t.equal(await publicKeyOf(second), key, 'the second app on the same folder answers the same key')

  const other = await build(t)
  t.not(await publicKeyOf(other), key, 'another DATA_DIR has keys of its own')

  const service = await pushService(t, key)
  const keys = vapidKeys(second.config)
  t.ok(keys)
  await sendPush(service.subscription, 'signed with the kept keys', keys!, { timeoutMs: 5000, ...LOCAL })
  t.same(service.received.map(message => message.plaintext), ['signed with the kept keys'])
})

t.test('in production without VAPID keys, Web Push is off: 503 PUSH_DISABLED', async t => {
  const db = await testDatabase(t)
  const config = { ...testConfig(t, db.url), production: true }
  t.equal(vapidKeys(config), null)
  const app = await buildApp(config, { logStream: new Writable({ write (_chunk, _encoding, done) { done() } }) })
  t.teardown(() => app.close())
  const user = await register(app)
  const res = await app.inject({ method: 'GET', url: '/api/push/public-key', headers: bearer(user.accessToken) })
  t.equal(res.statusCode, 503)
  t.equal(res.json().code, 'PUSH_DISABLED')
  t.match(res.json().error, /VAPID_PUBLIC_KEY/)
})

t.test('sendPush delivers a message the push service decrypts, under a VAPID header that verifies', async t => {
  const keys = newKeys()
  const service = await pushService(t, keys.publicKey)
  const text = 'Zoë: MMR due (dose 2) on 2026-05-01 💉'
  await sendPush(service.subscription, text, keys, { timeoutMs: 5000, ttlSeconds: 3600, ...LOCAL })
  t.same(service.refused, [])
  t.equal(service.received.length, 1)
  const [message] = service.received
  t.equal(message.plaintext, text, 'decrypted to the same text')
  t.equal(message.ttl, 3600)
  t.equal(message.claims.aud, service.origin, 'aud is the push service\'s origin')
  t.equal(message.claims.sub, SUBJECT)
  const now = Date.now() / 1000
  t.ok(message.claims.exp > now && message.claims.exp <= now + 24 * 3600, 'exp within 24 hours')

  await sendPush(service.subscription, 'a', keys, { timeoutMs: 5000, ...LOCAL })
  t.equal(service.received[1].ttl, 86_400, 'a day by default')
  await sendPush(service.subscription, 'x'.repeat(MAX_PAYLOAD_BYTES), keys, { timeoutMs: 5000, ...LOCAL })
  t.equal(service.received[2].plaintext.length, MAX_PAYLOAD_BYTES, 'the longest message fits in one 4096-byte record')
  const long = await refusal(sendPush(service.subscription, 'x'.repeat(MAX_PAYLOAD_BYTES + 1), keys, { timeoutMs: 5000, ...LOCAL }))
  t.match(long.message, /at most 3993/)
  t.equal(service.received.length, 3, 'a message too long is not sent')
})

t.test('the push service refuses what a real one would, so its checks can fail', async t => {
  const keys = newKeys()
  const service = await pushService(t, keys.publicKey)

  const otherKeys = newKeys()
  const wrongKey = await refusal(sendPush(service.subscription, 'hello', otherKeys, { timeoutMs: 5000, ...LOCAL }))
  t.equal(wrongKey.status, 403, 'another VAPID key than the subscription\'s')
  t.equal(wrongKey.message, 'The push service answered 403', 'the status alone')
  t.match(service.refused.at(-1)?.reason, /k is not the key the subscription was made with/)
  t.equal(wrongKey.gone, false)

  const forged = signedHeaders(service, { ...keys, privateKey: otherKeys.privateKey })
  t.equal(await post(service, forged.headers, forged.body), 401, 'the right k, signed by another key')
  t.match(service.refused.at(-1)?.reason, /JWT: signature verification failed/)

  const elsewhere = signedHeaders({ ...service, subscription: { ...service.subscription, endpoint: service.subscription.endpoint.replace('127.0.0.1', '127.0.0.2') } }, keys)
  t.equal(await post(service, elsewhere.headers, elsewhere.body), 401, 'aud of another origin')
  t.match(service.refused.at(-1)?.reason, /aud/)

  const good = signedHeaders(service, keys)
  const point = Buffer.from(keys.publicKey, 'base64url')
  const jwk = { kty: 'EC', crv: 'P-256', x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33).toString('base64url'), d: keys.privateKey }
  const signer = await importJWK(jwk, 'ES256')
  const now = Math.floor(Date.now() / 1000)
  const jwtWith = (claims: Record<string, unknown>) => new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ: 'JWT' }).sign(signer)
  const withJwt = (jwt: string) => ({ ...good.headers, Authorization: `vapid t=${jwt}, k=${keys.publicKey}` })
  t.equal(await post(service, withJwt(await jwtWith({ aud: service.origin, sub: SUBJECT, exp: now + 12 * 3600 })), good.body), 201, 'a JWT made by hand passes')
  t.equal(await post(service, withJwt(await jwtWith({ aud: service.origin, sub: SUBJECT, exp: now - 60 })), good.body), 401, 'expired')
  t.match(service.refused.at(-1)?.reason, /exp/)
  t.equal(await post(service, withJwt(await jwtWith({ aud: service.origin, sub: SUBJECT, exp: now + 25 * 3600 })), good.body), 401, 'exp beyond 24 hours')
  t.match(service.refused.at(-1)?.reason, /24 hours/)
  t.equal(await post(service, withJwt(await jwtWith({ aud: service.origin, exp: now + 3600 })), good.body), 401, 'no sub')
  t.match(service.refused.at(-1)?.reason, /sub/)
  t.equal(await post(service, { ...good.headers, Authorization: `WebPush ${good.headers.Authorization.slice(8)}` }, good.body), 401, 'not the vapid scheme')

  const { TTL: _ttl, ...noTtl } = good.headers
  t.equal(await post(service, noTtl, good.body), 400, 'no TTL')
  t.equal(await post(service, { ...good.headers, 'Content-Encoding': 'aesgcm' }, good.body), 415, 'not aes128gcm')

  const stranger = subscriber().json(service.subscription.endpoint)
  const theirs = signedHeaders({ ...service, subscription: stranger }, keys)
  t.equal(await post(service, theirs.headers, theirs.body), 400, 'encrypted for another browser')
  t.match(service.refused.at(-1)?.reason, /does not decrypt/)
  const tampered = Buffer.from(good.body)
  tampered[tampered.length - 1] ^= 1
  t.equal(await post(service, good.headers, tampered), 400, 'a changed byte')
  t.same(service.received.map(message => message.plaintext), ['hello'], 'only the message made by hand got through')
})

t.test('a push service\'s refusal is its status alone, never its body; 404 and 410 say the subscription is gone', async t => {
  const keys = newKeys()
  const service = await pushService(t, keys.publicKey)
  service.failure = { status: 410, text: 'push subscription has unsubscribed or expired.' }
  const gone = await refusal(sendPush(service.subscription, 'hello', keys, { timeoutMs: 5000, ...LOCAL }))
  t.ok(gone instanceof Error)
  t.equal(gone.gone, true)
  t.equal(gone.status, 410)
  t.equal(gone.message, 'The push service answered 410 (the subscription is gone)')

  service.failure = { status: 404, text: '' }
  const missing = await refusal(sendPush(service.subscription, 'hello', keys, { timeoutMs: 5000, ...LOCAL }))
  t.same([missing.gone, missing.status, missing.message], [true, 404, 'The push service answered 404 (the subscription is gone)'])

  service.failure = { status: 429, text: 'Too many\nrequests', headers: { 'retry-after': '120' } }
  const busy = await refusal(sendPush(service.subscription, 'hello', keys, { timeoutMs: 5000, ...LOCAL }))
  t.same([busy.gone, busy.status, busy.retryAfter, busy.message], [false, 429, 120, 'The push service answered 429'])

  service.failure = { status: 500, text: 'secret of the push service: ' + 'x'.repeat(5000) }
  const broken = await refusal(sendPush(service.subscription, 'hello', keys, { timeoutMs: 5000, ...LOCAL }))
  t.same([broken.gone, broken.status, broken.retryAfter, broken.message], [false, 500, null, 'The push service answered 500'])
})

t.test('a slow push service, a closed port and a name that does not resolve are told alike: could not be reached', async t => {
  const keys = newKeys()
  const service = await pushService(t, keys.publicKey)
  service.delayMs = 3000
  const started = Date.now()
  const slow = await refusal(sendPush(service.subscription, 'hello', keys, { timeoutMs: 300, ...LOCAL }), PostError)
  t.equal(slow.message, 'The push service could not be reached')
  t.equal(slow.refused, false)
  t.ok(Date.now() - started < 2000, `ended after ${Date.now() - started} ms`)

  const closed = createServer()
  await new Promise<void>(resolve => closed.listen(0, '127.0.0.1', resolve))
  const { port } = closed.address() as AddressInfo
  await new Promise(resolve => closed.close(resolve))
  const away = await refusal(sendPush({ ...service.subscription, endpoint: `http://127.0.0.1:${port}/push` }, 'hello', keys, { timeoutMs: 5000, ...LOCAL }), PostError)
  t.equal(away.message, slow.message, 'a refused port reads as a silent one')
  t.match(String((away.cause as Error).message), /ECONNREFUSED/, 'the cause keeps what happened, for the log')
  const unknown = await refusal(sendPush({ ...service.subscription, endpoint: 'http://push.invalid/push' }, 'hello', keys, { timeoutMs: 5000, ...LOCAL }), PostError)
  t.equal(unknown.message, slow.message, 'and so does a name that does not resolve')
})

t.test('checkSubscription refuses what is not a browser\'s subscription', async t => {
  const good = subscriber().json('https://push.example.net/send/abc')
  t.equal(checkSubscription(good), null)
  t.equal(checkSubscription({ ...good, endpoint: 'http://127.0.0.1:8080/push' }), null, 'http is allowed')
  t.equal(checkSubscription({ endpoint: good.endpoint, keys: { p256dh: good.keys.p256dh + '=', auth: good.keys.auth + '==' } }), null, 'padded base64url')
  const point = Buffer.from(good.keys.p256dh, 'base64url')
  const offCurve = Buffer.from(point)
  offCurve[64] ^= 1
  const bad: Array<[unknown, RegExp]> = [
    [null, /must be an object/],
    ['https://push.example.net', /must be an object/],
    [[good], /must be an object/],
    [{ keys: good.keys }, /^endpoint must be a URL/],
    [{ ...good, endpoint: 'not a url' }, /^endpoint must be a URL/],
    [{ ...good, endpoint: 'ftp://push.example.net/x' }, /http or https/],
    [{ ...good, endpoint: 'javascript:alert(1)' }, /http or https/],
    [{ ...good, endpoint: 'https://user:pw@push.example.net/x' }, /user name or password/],
    [{ ...good, endpoint: 'https://push.example.net/' + 'a'.repeat(2048) }, /at most 2048/],
    [{ endpoint: good.endpoint }, /^keys must be an object/],
    [{ endpoint: good.endpoint, keys: { auth: good.keys.auth } }, /keys.p256dh must be base64url/],
    [{ endpoint: good.endpoint, keys: { ...good.keys, p256dh: 'a+b/c' } }, /keys.p256dh must be base64url/],
    [{ endpoint: good.endpoint, keys: { ...good.keys, p256dh: point.subarray(0, 33).toString('base64url') } }, /keys.p256dh must be an uncompressed P-256 point .* got 33 bytes/],
    [{ endpoint: good.endpoint, keys: { ...good.keys, p256dh: offCurve.toString('base64url') } }, /keys.p256dh is not a point on the P-256 curve/],
    [{ endpoint: good.endpoint, keys: { p256dh: good.keys.p256dh } }, /keys.auth must be base64url/],
    [{ endpoint: good.endpoint, keys: { ...good.keys, auth: 12 } }, /keys.auth must be base64url/],
    [{ endpoint: good.endpoint, keys: { ...good.keys, auth: Buffer.alloc(15).toString('base64url') } }, /keys.auth must be 16 bytes, got 15/],
    [{ endpoint: good.endpoint, keys: { ...good.keys, auth: Buffer.alloc(32).toString('base64url') } }, /keys.auth must be 16 bytes, got 32/]
  ]
  for (const [subscription, problem] of bad) t.match(checkSubscription(subscription), problem, JSON.stringify(subscription)?.slice(0, 80))
  const refused = await refusal(sendPush({ ...good, endpoint: 'ftp://push.example.net/x' }, 'hello', newKeys(), { timeoutMs: 1000, ...LOCAL }))
  t.equal(refused.message, 'The push subscription is not valid: endpoint must be an http or https URL')
})
