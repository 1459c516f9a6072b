import t, { type Test } from 'tap'
import net from 'node:net'
import { freePort } from '../db/embedded'
import { createSigner } from 'fast-jwt'
import { bearer, build, call, register, PASSWORD, type App, type Pair } from './helper'

/**
 * The auth rate limits: a bucket per client address on each auth route, one
 * per account on every route that checks a password or changes an e-mail,
 * and all of them counted in memory while the Redis that shares them does not
 * answer.
 */

const MAX = 10

/** The statuses of `count` logins in a row, from one address or (`ip` a function) each from its own. */
async function logins (app: App, count: number, email: string, ip: string | ((i: number) => string) = '198.51.100.7', password = PASSWORD): Promise<number[]> {
  const statuses: number[] = []
  for (let i = 0; i < count; i += 1) {
    const remoteAddress = typeof ip === 'string' ? ip : ip(i)
    const res = await app.inject({ method: 'POST', url: '/api/auth/login', remoteAddress, payload: { email, password } })
    statuses.push(res.statusCode)
    if (res.statusCode === 429) {
      if (res.json().code !== 'RATE_LIMITED' || !(Number(res.headers['retry-after']) > 0)) throw new Error(`a 429 without its code or Retry-After: ${res.body}`)
    }
  }
  return statuses
}

/** A server that takes connections and never says a word, as a Redis that hangs. */
async function silentServer (t: Test): Promise<number> {
  const sockets = new Set<net.Socket>()
  const server = net.createServer(socket => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>(resolve => {
    for (const socket of sockets) socket.destroy()
    server.close(() => resolve())
  }))
  return (server.address() as net.AddressInfo).port
}

async function until (what: string, ok: () => boolean, ms = 10000): Promise<void> {
  for (let waited = 0; waited < ms; waited += 20) {
    if (ok()) return
    await new Promise(resolve => setTimeout(resolve, 20))
  }
  throw new Error(`${what} did not happen within ${ms} ms`)
}

for (const [outage, redisUrl] of [
  ['nothing listens at its port', async () => `redis://127.0.0.1:${await freePort()}`],
  ['it takes connections and never answers', async (t: Test) => `redis://127.0.0.1:${await silentServer(t)}`]
] as const) {
  t.test(`while REDIS_URL's Redis is unreachable (${outage}), the limits are counted in memory and a warning is logged once`, async t => {
    const logs: string[] = []
    const app = await build(t, {
      logs,
      env: { REGISTRATION: 'open', LOG_LEVEL: 'warn', REDIS_URL: await redisUrl(t), AUTH_RATE_LIMIT_MAX: String(MAX), AUTH_RATE_LIMIT_WINDOW: '60' }
    })
    const user = await register(app)
    const statuses = await logins(app, 24, user.user.email)
    t.same(statuses, [...Array(MAX).fill(200), ...Array(24 - MAX).fill(429)], 'the 11th login of 24 from one address meets a 429')
    const other = await register(app)
    t.equal((await logins(app, 1, other.user.email, '198.51.100.8'))[0], 200, 'another address has its own count')
    const spread = await logins(app, 24, other.user.email, i => `192.0.2.${i + 10}`)
    t.same(spread, [...Array(MAX - 1).fill(200), ...Array(25 - MAX).fill(429)], 'and so has an account, logged into from 24 addresses')
    if (outage === 'nothing listens at its port') {
      await until('the warning', () => logs.some(line => line.includes('Redis is unreachable')))
      const warnings = logs.filter(line => line.includes('Redis is unreachable'))
      t.equal(warnings.length, 1, 'one warning, not one a request or a reconnection')
      t.equal(JSON.parse(warnings[0]).level, 40, 'at level warn')
      t.match(warnings[0], /counted in this instance's memory/)
    }
  })
}

t.test('requests that come together are counted one by one: exactly AUTH_RATE_LIMIT_MAX of a burst pass', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open', AUTH_RATE_LIMIT_MAX: String(MAX), AUTH_RATE_LIMIT_WINDOW: '60' } })
  const burst = await Promise.all(Array.from({ length: 40 }, (_, i) => app.inject({
    method: 'POST', url: '/api/auth/login', remoteAddress: '198.51.100.40', payload: { email: `nobody${i}@example.org`, password: 'a wrong password' }
  })))
  t.same(burst.filter(res => res.statusCode !== 429).map(res => res.statusCode), Array(MAX).fill(401), 'ten answered, the rest refused')
})

t.test('a login is limited per account too: guessing one account from many addresses meets a 429 after AUTH_RATE_LIMIT_MAX', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open', AUTH_RATE_LIMIT_MAX: String(MAX), AUTH_RATE_LIMIT_WINDOW: '60' } })
  const victim = await register(app, { email: 'Victim@Example.org' })
  const bystander = await register(app)
  const address = (i: number) => `203.0.113.${i + 1}`
  const guesses: number[] = []
  for (let i = 0; i < 24; i += 1) {
    // The e-mail in any case: it names the same account.
    const email = i % 2 === 0 ? 'victim@example.org' : 'VICTIM@example.ORG'
    guesses.push(...await logins(app, 1, email, address(i), `guess number ${i}`))
  }
  t.same(guesses, [...Array(MAX).fill(401), ...Array(24 - MAX).fill(429)], 'refused guesses count, and the 11th meets a 429')
  t.same(await logins(app, 1, victim.user.email, '203.0.113.200'), [429], 'the right password too, from a new address, until the window ends')
  t.same(await logins(app, 3, bystander.user.email, address), [200, 200, 200], 'another account from the same addresses is not limited')

  const unknown: number[] = []
  for (let i = 0; i < 12; i += 1) unknown.push(...await logins(app, 1, 'nobody@example.org', address(i)))
  t.same(unknown, [...Array(MAX).fill(401), 429, 429], 'an account that does not exist is limited alike, so the limit tells nothing')
})

t.test('the account\'s bucket is counted once the body is read: a malformed login counts only against its address', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open', AUTH_RATE_LIMIT_MAX: '2', AUTH_RATE_LIMIT_WINDOW: '60' } })
  const user = await register(app)
  for (let i = 0; i < 3; i += 1) {
    const res = await app.inject({ method: 'POST', url: '/api/auth/login', remoteAddress: `203.0.113.${i + 1}`, payload: { email: user.user.email } })
    t.equal(res.statusCode, 400, 'a body without a password is a 400')
  }
  t.same(await logins(app, 1, user.user.email, '203.0.113.50'), [200], 'and did not count against the account')
})

const changePassword = (app: App, ip: string, token: string | null, currentPassword = 'not the password') => app.inject({
  method: 'POST',
  url: '/api/me/password',
  remoteAddress: ip,
  headers: token === null ? {} : bearer(token),
  payload: { currentPassword, newPassword: 'a new password 1' }
})

t.test('changing the password is limited per address before authentication, and per account after it', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open', AUTH_RATE_LIMIT_MAX: '3', AUTH_RATE_LIMIT_WINDOW: '60' } })
  const user = await register(app)
  const bystander = await register(app)
  const statuses: number[] = []
  for (let i = 0; i < 3; i += 1) statuses.push((await changePassword(app, '203.0.113.1', user.accessToken)).statusCode)
  t.same(statuses, [403, 403, 403], 'wrong passwords are refused, and counted')
  const limited = await changePassword(app, '203.0.113.1', user.accessToken, PASSWORD)
  t.equal(limited.statusCode, 429, 'the 4th is refused, the right password too')
  t.equal(limited.json().code, 'RATE_LIMITED')
  t.ok(Number(limited.headers['retry-after']) > 0, 'with Retry-After')
  t.equal((await changePassword(app, '203.0.113.1', null)).statusCode, 429, 'from that address even without a token: the address is counted before authentication')
  const elsewhere = await changePassword(app, '203.0.113.2', user.accessToken, PASSWORD)
  t.equal(elsewhere.statusCode, 429, 'from another address the account is still limited')
  t.ok(Number(elsewhere.headers['retry-after']) > 0)
  t.equal((await changePassword(app, '203.0.113.2', bystander.accessToken)).statusCode, 403, 'another account from that address is not')
  const malformed = await app.inject({ method: 'POST', url: '/api/me/password', remoteAddress: '203.0.113.3', headers: bearer(user.accessToken), payload: { nope: 1 } })
  t.equal(malformed.statusCode, 429, 'the account is counted before the body')
})

t.test('a forged or revoked token counts in no account\'s bucket: it cannot lock the account out', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open', AUTH_RATE_LIMIT_MAX: '3', AUTH_RATE_LIMIT_WINDOW: '60' } })
  const victim: Pair = await register(app)
  const claims = JSON.parse(Buffer.from(victim.accessToken.split('.')[1], 'base64url').toString())
  const forged = createSigner({ key: 'a secret that is not the service\'s 0123456789', algorithm: 'HS256', expiresIn: 60000 })({ sub: claims.sub, sid: claims.sid, role: 'user', families: [] })
  const old = await app.inject({ method: 'POST', url: '/api/auth/login', remoteAddress: '198.51.100.99', payload: { email: victim.user.email, password: PASSWORD } })
  const stolen = old.json().accessToken as string
  t.equal((await app.inject({ method: 'POST', url: '/api/auth/logout', headers: bearer(stolen), payload: {} })).statusCode, 204)
  for (let i = 0; i < 6; i += 1) {
    t.equal((await changePassword(app, `198.51.100.${i + 1}`, forged)).statusCode, 401, 'a forged token naming the victim')
    t.equal((await changePassword(app, `198.51.100.${i + 11}`, stolen)).statusCode, 401, 'a token of a session that ended')
  }
  t.equal((await changePassword(app, '198.51.100.50', victim.accessToken, PASSWORD)).statusCode, 204, 'the victim changes the password')
})

const changeEmail = (app: App, pair: Pair, email: string, ip = '192.0.2.1') => app.inject({
  method: 'PATCH', url: '/api/me', remoteAddress: ip, headers: bearer(pair.accessToken), payload: { email }
})

t.test('300 e-mail changes in a burst, probing which addresses are taken, meet a 429 after AUTH_RATE_LIMIT_MAX', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open', AUTH_RATE_LIMIT_MAX: String(MAX), AUTH_RATE_LIMIT_WINDOW: '60' } })
  const prober = await register(app)
  const taken = await Promise.all(Array.from({ length: 5 }, (_, i) => register(app, { email: `taken${i}@example.org` })))
  const started = Date.now()
  const probes = await Promise.all(Array.from({ length: 300 }, (_, i) =>
    changeEmail(app, prober, i % 60 < 5 ? taken[i % 60].user.email : `probe${i}@example.org`)))
  t.comment(`300 probes in ${Date.now() - started} ms`)
  const statuses = probes.map(res => res.statusCode)
  t.equal(statuses.filter(status => status !== 429).length, MAX, 'only AUTH_RATE_LIMIT_MAX are answered')
  t.ok(statuses.every(status => [200, 409, 429].includes(status)), 'the rest are 429')
  const refused = probes.find(res => res.statusCode === 429)
  t.equal(refused?.json().code, 'RATE_LIMITED')
  t.ok(Number(refused?.headers['retry-after']) > 0, 'with Retry-After')
})

t.test('an e-mail change is counted per account and per address, and only when the e-mail changes', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open', AUTH_RATE_LIMIT_MAX: '3', AUTH_RATE_LIMIT_WINDOW: '60' } })
  const user = await register(app)
  const other = await register(app)
  const third = await register(app)
  t.same([
    (await changeEmail(app, user, 'first@example.org', '192.0.2.1')).statusCode,
    (await changeEmail(app, user, other.user.email, '192.0.2.2')).statusCode,
    (await changeEmail(app, user, 'second@example.org', '192.0.2.3')).statusCode
  ], [200, 409, 200], 'three changes from three addresses, the refused one counted too')
  t.equal((await changeEmail(app, user, 'third@example.org', '192.0.2.4')).statusCode, 429, 'the account\'s 4th, from a 4th address')
  t.equal((await changeEmail(app, user, 'second@example.org', '192.0.2.4')).statusCode, 200, 'the same e-mail again is not a change, and not counted')
  t.equal((await call(app, user, 'PATCH', '/api/me', { name: 'A new name' })).statusCode, 200, 'nor is a change of the name alone')

  t.same([
    (await changeEmail(app, other, 'o1@example.org', '192.0.2.9')).statusCode,
    (await changeEmail(app, third, 't1@example.org', '192.0.2.9')).statusCode,
    (await changeEmail(app, other, 'o2@example.org', '192.0.2.9')).statusCode
  ], [200, 200, 200])
  t.equal((await changeEmail(app, third, 't2@example.org', '192.0.2.9')).statusCode, 429, 'an address\'s 4th, whatever the accounts')
  t.equal((await changeEmail(app, third, 't2@example.org', '192.0.2.10')).statusCode, 200, 'the same account elsewhere has changes left')
  t.equal((await call(app, user, 'GET', '/api/me')).json().email, 'second@example.org', 'a refused change changed nothing')
})
