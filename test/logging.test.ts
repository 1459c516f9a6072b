import t, { type Test } from 'tap'
import { Type } from '@sinclair/typebox'
import { Secret, StrictObject } from '../lib/schemas'
import sharp from 'sharp'
import { randomBytes } from 'node:crypto'
import { mkdirSync, utimesSync, writeFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { bearer, build, call, register, tempDir, type App, type BuildOptions } from './helper'
import { file, form } from './multipart'

async function until (check: () => boolean, ms = 5000): Promise<boolean> {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (check()) return true
    await new Promise(resolve => setTimeout(resolve, 20))
  }
  return check()
}

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

/** The app at the most verbose level, with every line it logs. */
async function traced (t: Test, options: BuildOptions = {}): Promise<{ app: App, logs: string[] }> {
  const logs: string[] = []
  return { app: await build(t, { ...options, logs, env: { LOG_LEVEL: 'trace' } }), logs }
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
  const { app, logs } = await traced(t, { routes })
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
    method: 'POST', url, payload, headers: token === undefined ? {} : bearer(token)
  })
  const a = (await post('/api/auth/register', { email: 'a@example.org', password: secrets[0], name: 'Alma' })).json()
  const b = (await post('/api/auth/register', { email: 'b@example.org', password: secrets[1], name: 'Bo' })).json()
  const family = (await app.inject({ method: 'GET', url: '/api/me', headers: bearer(a.accessToken) })).json().families[0].id
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
  const { app, logs } = await traced(t)
  const res = await app.inject({ method: 'GET', url: '/api/families/1/events?ticket=a-ticket-that-must-stay-secret&since=x' })
  t.equal(res.statusCode, 401)
  t.ok(logs.some(line => line.includes('/api/families/1/events?ticket=[redacted]&since=x')), 'the request is logged without it')
  t.notOk(logs.some(line => line.includes('a-ticket-that-must-stay-secret')), 'the ticket is in no line')
})

t.test('an access token, a key or a password in a URL\'s query never reaches the logs, in any spelling', async t => {
  const { app, logs } = await traced(t)
  const secret = 'a-query-secret-that-must-stay-hidden'
  const urls = [
    `/api/me?access_token=${secret}`,
    `/api/children?limit=5&ACCESS_TOKEN=${secret}&offset=0`,
    `/api/me?access%5Ftoken=${secret}`,
    `/api/me?refresh_token=${secret}&id_token=${secret}`,
    `/api/me?api_key=${secret}&key=${secret}&token=${secret}`,
    `/api/me?password=${secret}&passcode=${secret}`,
    `/api/auth/oidc/start?redirect=/&link=${secret}`
  ]
  for (const url of urls) await app.inject({ method: 'GET', url })
  t.notOk(logs.some(line => line.includes(secret)), 'the secret is in no line')
  t.ok(logs.some(line => line.includes('/api/me?access_token=[redacted]')), 'the request is logged without it')
  t.ok(logs.some(line => line.includes('/api/children?limit=5&ACCESS_TOKEN=[redacted]&offset=0')), 'the other parameters are kept')
  t.ok(logs.some(line => line.includes('/api/me?access%5Ftoken=[redacted]')), 'a name spelled with percent-encoding is known')
})

t.test('a calendar feed\'s token in a URL never reaches the logs', async t => {
  const { app, logs } = await traced(t)
  const token = 'a-feed-token-that-must-stay-secret-0123456'
  for (const url of [`/api/calendar/${token}.ics`, `/api/calendar/${token}.ics?x=1`, `/api/calendar/${token}/more`, `/api/%63alendar/${token}.ics`]) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 404)
  }
  t.ok(logs.some(line => line.includes('"/api/calendar/[redacted].ics"')), 'the request is logged without it')
  t.ok(logs.some(line => line.includes('"/api/calendar/[redacted].ics?x=1"')), 'the query string is kept')
  t.notOk(logs.some(line => line.includes('a-feed-token')), 'the token is in no line')
})

t.test('a stored file\'s address reaches no log line, at any level', async t => {
  const logs: string[] = []
  const files = tempDir(t, 'child-health-log-')
  const uploadDir = path.join(files, 'uploads')
  const avatarDir = path.join(files, 'avatars')
  mkdirSync(uploadDir, { recursive: true })
  const orphan = `${randomBytes(16).toString('hex')}.pdf`
  writeFileSync(path.join(uploadDir, orphan), '%PDF-1.4\n')
  const anHourAgo = new Date(Date.now() - 2 * 60 * 60 * 1000)
  utimesSync(path.join(uploadDir, orphan), anHourAgo, anHourAgo)

  const app = await build(t, {
    logs,
    env: { LOG_LEVEL: 'info', REGISTRATION: 'open', UPLOAD_DIR: uploadDir, AVATAR_DIR: avatarDir },
    routes: app => app.get('/api/test/stored-file-failure', async () => {
      await readFile(path.join(uploadDir, `${'ab'.repeat(16)}.png`))
    })
  })
  const swept = await until(() => logs.some(line => line.includes('removed files left without their rows')))
  t.ok(swept, 'the sweep removed the orphan')
  const sweepLine = JSON.parse(logs.find(line => line.includes('removed files left without their rows')) as string)
  t.equal(sweepLine.uploads, 1, 'the sweep logs how many files it removed')
  t.equal(sweepLine.avatars, 0)

  const owner = await register(app)
  const child = (await call(app, owner, 'POST', '/api/children', { name: 'Kim', dateOfBirth: '2022-03-15', sex: 'female' })).json()
  const pdf = form([file(Buffer.from('%PDF-1.4\n1 0 obj << >> endobj\n%%EOF\n'), 'scan.pdf', 'application/pdf')])
  const attachment = (await call(app, owner, 'POST', `/api/children/${child.id}/attachments`, pdf.payload, pdf.headers)).json()
  const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: 'teal' } }).png().toBuffer()
  const image = form([file(png, 'me.png', 'image/png')])
  const { avatarUrl } = (await call(app, owner, 'POST', `/api/children/${child.id}/avatar`, image.payload, image.headers)).json()
  const names = [orphan, attachment.url.split('/').pop(), avatarUrl.split('/').pop()]

  const stored = attachment.url.split('/').pop() as string
  const encoded = `/uploads/%${stored.charCodeAt(0).toString(16)}${stored.slice(1)}`
  for (const url of [attachment.url, avatarUrl, `${attachment.url}?download=1`, encoded, `/UPLOADS/${stored}`, `${avatarUrl}x`]) {
    await app.inject({ method: 'GET', url })
  }
  t.equal((await app.inject({ method: 'GET', url: '/api/test/stored-file-failure' })).statusCode, 500)
  t.equal((await call(app, owner, 'DELETE', `/api/attachments/${attachment.id}`)).statusCode, 204)

  t.ok(logs.some(line => line.includes('"/uploads/[redacted]"')), 'file requests are logged without the name')
  t.ok(logs.some(line => line.includes('"/avatars/[redacted]"')))
  t.ok(logs.some(line => line.includes('"/uploads/[redacted]?download=1"')), 'the query string is kept')
  t.ok(logs.some(line => line.includes('request failed') && line.includes('[stored file]')), 'an error naming a stored file is logged without its name')
  for (const name of [...names, 'ab'.repeat(16)]) {
    t.notOk(logs.some(line => line.includes(name.split('.')[0])), `${name} is in no line`)
  }
})
