import t from 'tap'
import { createServer, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { bearer, build, call, familyOf, register } from './helper'

/**
 * The optional libraries load when their feature is first used, or at start
 * when it is configured (Redis): a default start loads none of them. tap runs
 * this file in a process of its own, so the module cache starts clean.
 */

// The CSV parser and the zip writer are not optional, but load with the first CSV read and the first archive;
// the docs page's swagger-ui with the page's first request.
const OPTIONAL = ['ioredis', 'web-push', 'nodemailer', 'openid-client', 'jose', 'qrcode', 'undici', 'file-type', 'csv-parse', 'yazl', '@fastify/swagger-ui']

function loaded (name: string): boolean {
  return Object.keys(require.cache).some(file => file.includes(`/node_modules/${name}/`))
}

function loadedOf (names: string[]): string[] {
  return names.filter(loaded)
}

const FROM = 'Child health <health@example.org>'

/** An SMTP server on 127.0.0.1 that takes every message: the messages' data. */
async function smtpServer (t: Parameters<typeof build>[0]): Promise<{ url: string, messages: string[] }> {
  const messages: string[] = []
  const sockets = new Set<Socket>()
  const server = createServer(socket => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    let data: string | null = null
    let buffered = ''
    socket.write('220 localhost ESMTP\r\n')
    socket.on('data', chunk => {
      buffered += chunk.toString('utf8')
      let end: number
      while ((end = buffered.indexOf('\r\n')) >= 0) {
        const line = buffered.slice(0, end)
        buffered = buffered.slice(end + 2)
        if (data !== null) {
          if (line === '.') {
            messages.push(data)
            data = null
            socket.write('250 queued\r\n')
          } else data += line + '\n'
        } else if (/^(EHLO|HELO)/i.test(line)) socket.write('250 localhost\r\n')
        else if (/^DATA/i.test(line)) { data = ''; socket.write('354 go on\r\n') } else if (/^QUIT/i.test(line)) socket.end('221 bye\r\n')
        else socket.write('250 ok\r\n')
      }
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    for (const socket of sockets) socket.destroy()
    server.close()
  })
  return { url: `smtp://127.0.0.1:${(server.address() as AddressInfo).port}`, messages }
}

t.test('the test helper loads none of the optional libraries', async t => {
  t.same(loadedOf(OPTIONAL), [])
})

t.test('a default start, and its health, load none; a share link loads jose and qrcode, and it opens', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open' } })
  const health = await app.inject({ method: 'GET', url: '/api/health' })
  t.equal(health.statusCode, 200)
  t.equal(health.json().status, 'ok')
  t.same(loadedOf(OPTIONAL), [], 'nothing optional is loaded by a ready app and its health')

  const owner = await register(app)
  t.same(loadedOf(OPTIONAL), [], 'nor by registering and signing in')
  const child = (await call(app, owner, 'POST', '/api/children', { name: 'Kim', dateOfBirth: '2024-03-15', sex: 'female' })).json()
  const made = await call(app, owner, 'POST', `/api/children/${child.id}/shares`, { label: 'For Dr. Osei', expiresAt: new Date(Date.now() + 7 * 86_400_000).toISOString() })
  t.equal(made.statusCode, 201, made.body)
  t.match(made.json().qr, /^data:image\/png;base64,/, 'the QR code is drawn')
  t.ok(loaded('jose') && loaded('qrcode'), 'the first link loads jose and qrcode')

  const { url, key } = JSON.parse(Buffer.from(made.json().link.slice('shlink:/'.length), 'base64url').toString('utf8'))
  const manifest = await app.inject({ method: 'POST', url: new URL(url).pathname, payload: { recipient: 'Dr. Osei' } })
  t.equal(manifest.statusCode, 200, manifest.body)
  const { compactDecrypt } = await import('jose')
  const file = manifest.json().files[0]
  const { plaintext } = await compactDecrypt(file.embedded, Buffer.from(key, 'base64url'))
  t.equal(JSON.parse(Buffer.from(plaintext).toString('utf8')).resourceType, 'Bundle', 'its file, encrypted by jose, opens')
  t.same(loadedOf(['ioredis', 'web-push', 'nodemailer', 'openid-client', 'undici']), [], 'the others are still not loaded')
})

t.test('the docs page loads swagger-ui with its first request, and serves the page and its files', async t => {
  const app = await build(t)
  t.notOk(loaded('@fastify/swagger-ui'), 'a ready app has not loaded it')
  const page = await app.inject({ method: 'GET', url: '/api/docs' })
  t.equal(page.statusCode, 200)
  t.match(page.body, /<html/i)
  t.ok(loaded('@fastify/swagger-ui'), 'the first request loads it')
  const css = await app.inject({ method: 'GET', url: '/api/docs/static/index.css' })
  t.equal(css.statusCode, 200, 'the page\'s files are served')
  t.match(css.headers['content-type'], /^text\/css/)
  const again = await app.inject({ method: 'GET', url: '/api/docs/static/index.css', headers: { 'if-none-match': String(css.headers.etag) } })
  t.equal(again.statusCode, 304, 'a file the browser holds is a 304')
  const missing = await app.inject({ method: 'GET', url: '/api/docs/static/nothing.js' })
  t.equal(missing.statusCode, 404)
  t.match(missing.json(), { code: 'NOT_FOUND', error: 'File not found' }, 'a missing file is the service\'s 404')
  const yaml = await app.inject({ method: 'GET', url: '/api/docs/yaml' })
  t.equal(yaml.statusCode, 200)
  t.match(yaml.body, /^openapi: 3\.1\.0\n/, 'the document as YAML')
  const json = await app.inject({ method: 'GET', url: '/api/docs/json' })
  t.same(json.json(), JSON.parse(JSON.stringify(app.swagger())), 'and as JSON, the service\'s own document')
})

t.test('e-mail and Web Push, configured, load their libraries with the first message sent', async t => {
  const smtp = await smtpServer(t)
  const app = await build(t, { env: { SMTP_URL: smtp.url, MAIL_FROM: FROM, WEBHOOK_ALLOW_PRIVATE: 'true' } })
  const user = await register(app)
  t.same(loadedOf(['nodemailer', 'web-push']), [], 'configured, but nothing sent yet')

  const email = await call(app, user, 'PUT', '/api/me/notifications', { channels: [{ type: 'email', address: 'ada@example.org' }] })
  t.equal(email.statusCode, 200, email.body)
  t.ok(loaded('nodemailer'), 'the first e-mail loads nodemailer')
  t.equal(smtp.messages.length, 1, 'and its test message arrived')
  t.notOk(loaded('web-push'))

  const { publicKey } = (await app.inject({ method: 'GET', url: '/api/push/public-key', headers: bearer(user.accessToken) })).json()
  t.notOk(loaded('web-push'), 'the development keys are made and read without web-push')
  const { pushService } = await import('./push-service')
  const service = await pushService(t, publicKey)
  const push = await call(app, user, 'PUT', '/api/me/notifications', { channels: [{ type: 'webpush', subscription: service.subscription }] })
  t.equal(push.statusCode, 200, push.body)
  t.ok(loaded('web-push'), 'the first push loads web-push')
  t.equal(service.received.length, 1, 'and its test message arrived, encrypted and signed')
})

t.test('REDIS_URL loads ioredis at start, and the rate limits still count', async t => {
  t.notOk(loaded('ioredis'))
  const app = await build(t, { env: { REDIS_URL: 'redis://127.0.0.1:6379', AUTH_RATE_LIMIT_MAX: '2' } })
  t.ok(loaded('ioredis'), 'configured: loaded at start')
  const statuses: number[] = []
  for (let i = 0; i < 3; i++) {
    statuses.push((await app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'nobody@example.org', password: 'wrong password, long' } })).statusCode)
  }
  t.equal(statuses[2], 429, `the third login in the window is refused: ${statuses.join(' ')}`)
})

t.test('OIDC, configured, loads openid-client with the first sign-in, which succeeds', async t => {
  const { certified, exchange, oidcEnv, signIn } = await import('./oidc-flow')
  const provider = await certified(t, { alice: { email: 'alice@example.org', email_verified: true, name: 'Alice' } })
  const app = await build(t, { env: oidcEnv(provider) })
  t.notOk(loaded('openid-client'), 'configured, but nobody signed in yet')
  const done = await signIn(app, provider, 'alice')
  t.ok(loaded('openid-client'), 'the first sign-in loads openid-client')
  const pair = await exchange(app, done.fragment.get('oidcCode'))
  t.equal(pair.statusCode, 200, pair.body)
  t.match(pair.json().user, { email: 'alice@example.org' })
})

t.test('the job queue\'s worker loads with its first work: a start with no channel and no webhook loads neither graphile-worker nor pg; the first webhook starts it', async t => {
  const QUEUE = ['graphile-worker', 'pg']
  // A start reads graphile-worker's package.json (its version, to know whether the queue is installed): its code is what counts.
  const loadedOf = (names: string[]): string[] => names.filter(name => Object.keys(require.cache)
    .some(file => file.includes(`/node_modules/${name}/`) && !file.endsWith(`/node_modules/${name}/package.json`)))
  t.same(loadedOf(QUEUE), [], 'nothing before')
  const app = await build(t, { env: { JOB_WORKER: 'on', WEBHOOK_ALLOW_PRIVATE: 'true' } })
  const health = await app.inject({ method: 'GET', url: '/api/health' })
  t.equal(health.statusCode, 200)
  t.same(loadedOf(QUEUE), [], 'a ready app with nothing for the worker to do loads neither')

  const owner = await register(app)
  const child = await call(app, owner, 'POST', '/api/children', { name: 'Kim', dateOfBirth: '2024-03-15', sex: 'female' })
  t.equal(child.statusCode, 201)
  t.same(loadedOf(QUEUE), [], 'nor do writes without a webhook')
  const hook = await call(app, owner, 'POST', `/api/families/${familyOf(owner)}/webhooks`, { url: 'http://127.0.0.1:9/hook' })
  t.equal(hook.statusCode, 201, hook.body)
  for (let waited = 0; waited < 5000 && loadedOf(QUEUE).length < QUEUE.length; waited += 20) await new Promise(resolve => setTimeout(resolve, 20))
  t.same(loadedOf(QUEUE), QUEUE, 'the first webhook starts the worker, which loads them')
})
