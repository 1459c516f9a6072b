import t from 'tap'
import bcrypt from 'bcryptjs'
import { PASSWORD_JOBS_PER_KEY, PASSWORD_RETRY_AFTER } from '../io/passwords'
import { build, call, register, PASSWORD, type App, type Pair } from './helper'

/**
 * Password checks are a shared resource: bcrypt's threads serve accounts in
 * turns, and an account holds at most its share of them. Hashes here cost 10
 * (about 80 ms a check), so that jobs last long enough to wait behind each
 * other.
 */

const SLOW = { REGISTRATION: 'open', BCRYPT_COST: '10' }

const wrongChange = (app: App, pair: Pair) =>
  call(app, pair, 'POST', '/api/me/password', { currentPassword: 'not the password', newPassword: 'a new password 1' })

t.test('an account with its share of password checks waiting gets a 429 with Retry-After for one more, never a place in the queue', async t => {
  const app = await build(t, { env: SLOW })
  const flooder = await register(app)
  const answers = await Promise.all(Array.from({ length: 12 }, () => wrongChange(app, flooder)))
  const statuses = answers.map(res => res.statusCode)
  t.ok(statuses.every(status => status === 403 || status === 429), `only 403 and 429: ${statuses.join(' ')}`)
  t.ok(statuses.filter(status => status === 403).length >= PASSWORD_JOBS_PER_KEY, 'the account\'s share is checked')
  const refused = answers.find(res => res.statusCode === 429)
  t.ok(refused !== undefined, 'the rest are refused')
  t.equal(refused?.json().code, 'RATE_LIMITED')
  t.same(Object.keys(refused?.json() ?? {}).sort(), ['code', 'details', 'error'])
  t.equal(refused?.headers['retry-after'], String(PASSWORD_RETRY_AFTER))
  t.equal(answers.find(res => res.statusCode === 403)?.json().code, 'WRONG_PASSWORD')
})

t.test('a flood of one account\'s password checks delays another user\'s login by at most the jobs running', async t => {
  // The flood's checks cost 12 (a few hundred ms each) and the login's 4, so
  // that a login that started at once sees at most the checks already running
  // end, however slow the machine; one that waited in line behind the flood
  // would see many.
  const app = await build(t, { env: { REGISTRATION: 'open', BCRYPT_COST: '4' } })
  const flooder = await register(app)
  const other = await register(app)
  await app.db.sql`update users set password_hash = ${bcrypt.hashSync(PASSWORD, 12)} where id = ${flooder.user.id}`
  let stopped = false
  let checked = 0
  let refused = 0
  const loop = async (): Promise<void> => {
    while (!stopped) {
      const res = await wrongChange(app, flooder)
      if (res.statusCode === 403) checked += 1
      else if (res.statusCode === 429) refused += 1
      else throw new Error(`the flood got ${res.statusCode}: ${res.body}`)
      // A refusal needs no I/O: injected requests would otherwise keep the event loop from the workers' answers.
      await new Promise(resolve => setImmediate(resolve))
    }
  }
  // Sixteen loops: without turns, a login would wait behind sixteen checks.
  const loops = Array.from({ length: 16 }, loop)
  try {
    // The flood has filled its share once one of its checks is refused (or, were there no share, after a while).
    const filling = Date.now()
    while (refused === 0 && Date.now() - filling < 2000) await new Promise(resolve => setTimeout(resolve, 5))
    const before = checked
    const res = await app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: other.user.email, password: PASSWORD } })
    const during = checked - before
    t.equal(res.statusCode, 200, 'the other user logs in')
    t.ok(during <= 2 * PASSWORD_JOBS_PER_KEY, `the flood's checks answered during the login: ${during}`)
  } finally {
    stopped = true
    await Promise.all(loops)
  }
  t.ok(refused > 0, 'the flood beyond its share was refused')
})

t.test('an unknown account\'s login waits in the turn of its e-mail, with the same share', async t => {
  const app = await build(t, { env: SLOW })
  await register(app)
  const answers = await Promise.all(Array.from({ length: 8 }, () =>
    app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'Nobody@Example.org', password: 'a wrong password' } })))
  const statuses = answers.map(res => res.statusCode)
  t.ok(statuses.every(status => status === 401 || status === 429), statuses.join(' '))
  t.ok(statuses.includes(429), 'beyond its share, refused')
  t.ok(statuses.filter(status => status === 401).length >= PASSWORD_JOBS_PER_KEY)
})
