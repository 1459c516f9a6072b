import t from 'tap'
import { Type } from '@sinclair/typebox'
import { Secret, StrictObject } from '../lib/schemas'
import path from 'node:path'
import { build, tempDir, type App } from './helper'

const SECRETS = ['Bearer-secret-token-123', 'hunter2-password', 'refresh-secret-456']

function routes (app: App): void {
  app.post('/api/test/login', {
    schema: { body: StrictObject({ email: Type.String(), password: Secret(), refreshToken: Type.Optional(Secret()) }) }
  }, async request => {
    request.log.info({ body: request.body }, 'a handler that logs its body')
    request.log.info({ password: 'hunter2-password', user: { refreshToken: 'refresh-secret-456' } }, 'a careless log line')
    throw new Error('failure after reading the body')
  })
}

function send (app: App) {
  return app.inject({
    method: 'POST',
    url: '/api/test/login',
    headers: { authorization: 'Bearer Bearer-secret-token-123' },
    payload: { email: 'a@example.org', password: 'hunter2-password', refreshToken: 'refresh-secret-456' }
  })
}

t.test('secrets never reach the logs, even at the most verbose level', async t => {
  const logs: string[] = []
  const app = await build(t, { routes, logs, env: { LOG_LEVEL: 'trace' } })
  t.equal((await send(app)).statusCode, 500)
  t.ok(logs.length > 3, 'something was logged')
  t.ok(logs.some(line => line.includes('a careless log line')))
  for (const secret of SECRETS) {
    t.notOk(logs.some(line => line.includes(secret)), `${secret} is not in the logs`)
  }
  t.ok(logs.some(line => line.includes('[redacted]')), 'redacted values are marked')
})

t.test('production logs errors only, without request bodies', async t => {
  const logs: string[] = []
  const app = await build(t, { routes, logs, env: { NODE_ENV: 'production', BCRYPT_COST: '10', LOG_LEVEL: 'error' } })
  t.equal((await send(app)).statusCode, 500)
  t.equal((await app.inject({ method: 'GET', url: '/api/health' })).statusCode, 200)
  const levels = logs.map(line => JSON.parse(line).level)
  t.ok(levels.length >= 1, 'the failure is logged')
  t.ok(levels.every(level => level >= 50), 'only errors')
  t.notOk(logs.some(line => line.includes('a@example.org')), 'no request body')
  for (const secret of SECRETS) t.notOk(logs.some(line => line.includes(secret)))
})

t.test('a whole session in production leaves no secret and no body in the logs', async t => {
  const logs: string[] = []
  const files = tempDir(t, 'child-health-log-')
  const app = await build(t, {
    logs,
    env: { NODE_ENV: 'production', BCRYPT_COST: '10', LOG_LEVEL: 'trace', REGISTRATION: 'open', UPLOAD_DIR: path.join(files, 'uploads'), AVATAR_DIR: path.join(files, 'avatars') }
  })
  const secrets: string[] = ['first secret pass', 'second secret pass', 'changed secret pass']
  const post = async (url: string, payload: object, token?: string) => app.inject({
    method: 'POST', url, payload, headers: token === undefined ? {} : { authorization: `Bearer ${token}` }
  })
  const a = (await post('/api/auth/register', { email: 'a@example.org', password: secrets[0], name: 'Alma' })).json()
  const b = (await post('/api/auth/register', { email: 'b@example.org', password: secrets[1], name: 'Bo' })).json()
  const family = (await app.inject({ method: 'GET', url: '/api/me', headers: { authorization: `Bearer ${a.accessToken}` } })).json().families[0].id
  const invite = (await post(`/api/families/${family}/invites`, { email: 'b@example.org', role: 'member' }, a.accessToken)).json()
  await post('/api/invites/accept', { token: invite.token }, b.accessToken)
  await post('/api/children', { name: 'Secret Child Name', dateOfBirth: '2021-01-01', sex: 'female', familyId: family }, a.accessToken)
  const refreshed = (await post('/api/auth/refresh', { refreshToken: a.refreshToken })).json()
  await post('/api/auth/refresh', { refreshToken: a.refreshToken })
  await post('/api/me/password', { currentPassword: secrets[0], newPassword: secrets[2] }, refreshed.accessToken)
  await post('/api/auth/login', { email: 'a@example.org', password: 'wrong but secret' })
  await post('/api/auth/logout', { refreshToken: refreshed.refreshToken }, refreshed.accessToken)
  secrets.push('wrong but secret', a.accessToken, a.refreshToken, b.accessToken, b.refreshToken, refreshed.accessToken, refreshed.refreshToken, invite.token)
  for (const row of await app.sql`select password_hash as secret from users union all select token_hash from refresh_tokens union all select token_hash from invites`) {
    secrets.push(row.secret)
  }
  const text = logs.join('\n')
  t.ok(logs.length > 10, `${logs.length} log lines`)
  t.same(secrets.filter(secret => text.includes(secret)), [], 'no password, token or hash')
  t.notOk(text.includes('Secret Child Name'), 'no request body')
})

t.test('an event ticket in a URL never reaches the logs', async t => {
  const logs: string[] = []
  const app = await build(t, { logs, env: { LOG_LEVEL: 'trace' } })
  const res = await app.inject({ method: 'GET', url: '/api/families/1/events?ticket=a-ticket-that-must-stay-secret&since=x' })
  t.equal(res.statusCode, 401)
  t.ok(logs.some(line => line.includes('/api/families/1/events?ticket=[redacted]&since=x')), 'the request is logged without it')
  t.notOk(logs.some(line => line.includes('a-ticket-that-must-stay-secret')), 'the ticket is in no line')
})


t.test('a calendar feed\'s token in a URL never reaches the logs', async t => {
  const logs: string[] = []
  const app = await build(t, { logs, env: { LOG_LEVEL: 'trace' } })
  const token = 'a-feed-token-that-must-stay-secret-0123456'
  for (const url of [`/api/calendar/${token}.ics`, `/api/calendar/${token}.ics?x=1`, `/api/calendar/${token}/more`, `/api/%63alendar/${token}.ics`]) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 404)
  }
  t.ok(logs.some(line => line.includes('"/api/calendar/[redacted].ics"')), 'the request is logged without it')
  t.ok(logs.some(line => line.includes('"/api/calendar/[redacted].ics?x=1"')), 'the query string is kept')
  t.notOk(logs.some(line => line.includes('a-feed-token')), 'the token is in no line')
})
