import t from 'tap'
import os from 'node:os'
import { dataTables } from '../db/backup/tables'
import { build, call, register } from './helper'
import { loopbackName } from './outbound-helpers'
import { NEVER_HOSTS, ODD_URLS, PRIVATE_HOSTS } from './outbound-forms'
import { mailServer, ntfyServer } from './reminder-receivers'

const FROM = 'Child health <reminders@example.org>'

/** An app whose e-mail goes to `mail` and whose ntfy may be on this host. */
async function app (t: Parameters<typeof build>[0], smtpUrl: string, env: Record<string, string> = {}) {
  return build(t, { env: { SMTP_URL: smtpUrl, MAIL_FROM: FROM, WEBHOOK_ALLOW_PRIVATE: 'true', JOB_WORKER: 'off', REGISTRATION: 'open', ...env } })
}

t.test('a user reads and replaces the settings; new channels get a test message at once, kept ones do not', async t => {
  const mail = await mailServer(t)
  const ntfy = await ntfyServer(t)
  const server = await app(t, mail.url)
  const user = await register(server)

  const empty = await call(server, user, 'GET', '/api/me/notifications')
  t.equal(empty.statusCode, 200)
  t.same(empty.json(), { channels: [], quietHours: null })

  const topic = `${ntfy.origin}/kids-${Date.now()}`
  const quietHours = { from: '22:00', to: '07:00', timeZone: 'Europe/Berlin' }
  const put = await call(server, user, 'PUT', '/api/me/notifications', {
    channels: [{ type: 'email', address: 'Parent@Example.org' }, { type: 'ntfy', url: topic }],
    quietHours
  })
  t.equal(put.statusCode, 200, put.body)
  const settings = put.json()
  t.same(settings.quietHours, quietHours)
  t.match(settings.channels, [
    { type: 'email', address: 'Parent@Example.org', lastFailure: null, verifiedAt: String, lastDeliveryAt: String },
    { type: 'ntfy', url: topic, lastFailure: null, verifiedAt: String, lastDeliveryAt: String }
  ])
  t.equal(mail.mails.length, 1, 'the e-mail channel got its test message')
  t.same(mail.mails[0].to.map(to => to.toLowerCase()), ['parent@example.org'])
  t.match(mail.mails[0].raw, /^From: Child health <reminders@example\.org>/m)
  t.match(mail.mails[0].subject, /test message/)
  t.equal(ntfy.posts.length, 1, 'the ntfy topic got its test message')
  t.equal(ntfy.posts[0].path, new URL(topic).pathname)
  t.match(ntfy.posts[0].title, /test message/)
  t.match(ntfy.posts[0].text, /reminders will arrive here/)

  const read = await call(server, user, 'GET', '/api/me/notifications')
  t.same(read.json(), settings, 'GET shows what PUT answered')

  // The same e-mail in another case is the same channel: kept, with its id, and not tested again.
  const again = await call(server, user, 'PUT', '/api/me/notifications', {
    channels: [{ type: 'ntfy', url: topic }, { type: 'email', address: 'parent@example.org' }]
  })
  t.equal(again.statusCode, 200, again.body)
  t.equal(mail.mails.length, 1, 'no second test e-mail')
  t.equal(ntfy.posts.length, 1, 'no second test post')
  t.same(again.json().channels.map((c: any) => c.id), [settings.channels[1].id, settings.channels[0].id], 'the same rows, in the new order')
  t.equal(again.json().channels[1].address, 'parent@example.org', 'the address as now written')
  t.equal(again.json().quietHours, null, 'quiet hours left out are none')

  const other = `${ntfy.origin}/other`
  const changed = await call(server, user, 'PUT', '/api/me/notifications', { channels: [{ type: 'ntfy', url: other }] })
  t.equal(changed.statusCode, 200)
  t.equal(ntfy.posts.length, 2, 'a changed channel is tested')
  t.equal(changed.json().channels.length, 1, 'the e-mail channel left out is gone')

  const off = await call(server, user, 'PUT', '/api/me/notifications', { channels: [] })
  t.same(off.json(), { channels: [], quietHours: null }, 'an empty list turns reminders off')

  // Each user sees only their own.
  const stranger = await register(server)
  t.same((await call(server, stranger, 'GET', '/api/me/notifications')).json(), { channels: [], quietHours: null })
})

t.test('a channel that does not take its test message is a 422 CHANNEL_UNREACHABLE with the reason, and nothing is saved', async t => {
  const mail = await mailServer(t)
  const ntfy = await ntfyServer(t)
  const server = await app(t, mail.url, { REMINDER_SEND_TIMEOUT: '1' })
  const user = await register(server)
  const kept = { channels: [{ type: 'email', address: 'first@example.org' }], quietHours: { from: '21:00', to: '06:30', timeZone: 'UTC' } }
  t.equal((await call(server, user, 'PUT', '/api/me/notifications', kept)).statusCode, 200)
  const before = (await call(server, user, 'GET', '/api/me/notifications')).json()

  async function refused (channels: unknown[], reason: RegExp, index = channels.length - 1) {
    const res = await call(server, user, 'PUT', '/api/me/notifications', { channels, quietHours: null })
    t.equal(res.statusCode, 422, res.body)
    t.equal(res.json().code, 'CHANNEL_UNREACHABLE')
    t.equal(res.json().details.channel, index)
    t.match(res.json().details.reason, reason)
    t.match(res.json().error, reason)
    t.notOk(res.body.includes('topic unavailable'), 'the body of a failing answer is never shown')
    t.same((await call(server, user, 'GET', '/api/me/notifications')).json(), before, 'nothing saved')
  }

  ntfy.status = 500
  await refused([{ type: 'email', address: 'first@example.org' }, { type: 'ntfy', url: `${ntfy.origin}/t` }], /(^|: )ntfy answered 500$/)
  ntfy.status = 200
  // A silent server, a closed port and a name that does not resolve read alike: the reason does not tell ports apart.
  ntfy.delay = 2000
  await refused([{ type: 'ntfy', url: `${ntfy.origin}/slow` }], /(^|: )ntfy could not be reached$/)
  ntfy.delay = 0
  await refused([{ type: 'ntfy', url: 'http://127.0.0.1:1/closed' }], /(^|: )ntfy could not be reached$/)
  await refused([{ type: 'ntfy', url: 'http://ntfy.invalid/t' }], /(^|: )ntfy could not be reached$/)
  mail.refuse = 'No such mailbox'
  await refused([{ type: 'email', address: 'nobody@example.org' }], /No such mailbox/)
  mail.refuse = null
  t.equal(ntfy.posts.length, 0, 'the failed test messages were not recorded as received')
})

t.test('e-mail channels need SMTP_URL', async t => {
  const server = await build(t, { env: { JOB_WORKER: 'off' } })
  const user = await register(server)
  const res = await call(server, user, 'PUT', '/api/me/notifications', { channels: [{ type: 'email', address: 'a@example.org' }] })
  t.equal(res.statusCode, 422)
  t.match(res.json().details.reason, /SMTP_URL/)
})

t.test('ntfy on this host or a private network: refused at saving unless WEBHOOK_ALLOW_PRIVATE=true, in every spelling', async t => {
  const ntfy = await ntfyServer(t)
  const server = await build(t, { env: { JOB_WORKER: 'off' } })
  const user = await register(server)
  const port = new URL(ntfy.origin).port
  const own = Object.values(os.networkInterfaces()).flat().find(item => item !== undefined && !item.internal && item.family === 'IPv4')?.address
  const hosts: Array<[string, RegExp]> = [...PRIVATE_HOSTS, ...NEVER_HOSTS]
  if (own !== undefined) hosts.push([own, /own address|private network|shared/])
  for (const [host, what] of hosts) {
    const res = await call(server, user, 'PUT', '/api/me/notifications', { channels: [{ type: 'ntfy', url: `http://${host}:${port}/t` }] })
    t.equal(res.statusCode, 400, host)
    t.equal(res.json().details.issues[0].path, '/body/channels/0/url')
    t.match(res.json().details.issues[0].message, what, host)
  }
  // A name that resolves to this host is judged at saving, resolved.
  const hostname = await loopbackName(t)
  const named = await call(server, user, 'PUT', '/api/me/notifications', { channels: [{ type: 'ntfy', url: `http://${hostname}:${port}/t` }] })
  t.equal(named.statusCode, 400, named.body)
  t.same(named.json().details.issues, [{ path: '/body/channels/0/url', message: `must not be sent to: ${hostname} resolves to 127.0.0.1, a loopback address, refused unless WEBHOOK_ALLOW_PRIVATE=true` }])
  t.equal(ntfy.hits.length, 0, 'nothing reached the server')

  const allowed = await build(t, { env: { JOB_WORKER: 'off', WEBHOOK_ALLOW_PRIVATE: 'true' } })
  const someone = await register(allowed)
  const spellings = [`http://${hostname}:${port}/t`, `${ntfy.origin}/t`, `http://[::ffff:7f00:1]:${port}/t`, `http://0x7f.1:${port}/t`, `http://2130706433:${port}/t`]
  const ok = await call(allowed, someone, 'PUT', '/api/me/notifications', { channels: spellings.map(url => ({ type: 'ntfy', url })) })
  t.equal(ok.statusCode, 200, ok.body)
  t.equal(ntfy.posts.length, spellings.length, 'allowed, every one arrives')
  for (const [host, what] of NEVER_HOSTS) {
    const res = await call(allowed, someone, 'PUT', '/api/me/notifications', { channels: [{ type: 'ntfy', url: `http://${host}:${port}/t` }] })
    t.equal(res.statusCode, 400, `${host}: never, even with WEBHOOK_ALLOW_PRIVATE=true`)
    t.match(res.json().details.issues[0].message, what, host)
  }
})

t.test('an ntfy URL or push endpoint the service cannot parse is a 400 naming the field, never a 500', async t => {
  const envs: Array<Record<string, string>> = [{ JOB_WORKER: 'off' }, { JOB_WORKER: 'off', WEBHOOK_ALLOW_PRIVATE: 'true' }]
  for (const env of envs) {
    const server = await build(t, { env })
    const user = await register(server)
    const keys = { p256dh: 'B' + 'a'.repeat(86), auth: 'c'.repeat(22) }
    for (const odd of ODD_URLS) {
      const bodies: Array<[unknown, string]> = [
        [{ type: 'ntfy', url: odd }, '/body/channels/0/url'],
        [{ type: 'webpush', subscription: { endpoint: odd, keys } }, '/body/channels/0/subscription/endpoint']
      ]
      for (const [channel, path] of bodies) {
        const res = await call(server, user, 'PUT', '/api/me/notifications', { channels: [channel] })
        t.equal(res.statusCode, 400, `${JSON.stringify(odd)} ${env.WEBHOOK_ALLOW_PRIVATE ?? ''}`)
        t.equal(res.json().code, 'VALIDATION_ERROR')
        t.ok(res.json().details.issues.some((issue: any) => issue.path === path), res.body)
      }
    }
    t.same((await call(server, user, 'GET', '/api/me/notifications')).json(), { channels: [], quietHours: null }, 'nothing saved')
  }
})

t.test('bad settings are a 400 naming the field', async t => {
  const server = await build(t, { env: { JOB_WORKER: 'off' } })
  const user = await register(server)
  const key = 'B' + 'a'.repeat(86)
  const subscription = { endpoint: 'https://push.example.org/send/abc', keys: { p256dh: key, auth: 'c'.repeat(22) } }
  const cases: Array<[unknown, string]> = [
    [{}, '/body/channels'],
    [{ channels: [{ type: 'email', address: 'not an address' }] }, '/body/channels/0/address'],
    [{ channels: [{ type: 'email' }] }, '/body/channels/0/address'],
    [{ channels: [{ type: 'sms', number: '123' }] }, '/body/channels/0'],
    [{ channels: [{ type: 'ntfy', url: 'ftp://ntfy.example.org/t' }] }, '/body/channels/0/url'],
    [{ channels: [{ type: 'ntfy', url: 'ntfy.example.org/t' }] }, '/body/channels/0/url'],
    [{ channels: [{ type: 'ntfy', url: 'https://ntfy.example.org/t', extra: 1 }] }, '/body/channels/0/extra'],
    [{ channels: Array.from({ length: 11 }, (_v, i) => ({ type: 'email', address: `a${i}@example.org` })) }, '/body/channels'],
    [{ channels: [{ type: 'email', address: 'a@example.org' }, { type: 'email', address: 'A@example.org' }] }, '/body/channels/1'],
    [{ channels: [{ type: 'webpush', subscription: { ...subscription, keys: { p256dh: 'short', auth: 'c'.repeat(22) } } }] }, '/body/channels/0/subscription/keys/p256dh'],
    [{ channels: [{ type: 'webpush', subscription: { ...subscription, keys: { p256dh: key, auth: 'c' } } }] }, '/body/channels/0/subscription/keys/auth'],
    [{ channels: [{ type: 'webpush', subscription: { ...subscription, endpoint: 'mailto:x@example.org' } }] }, '/body/channels/0/subscription/endpoint'],
    [{ channels: [], quietHours: { from: '22:00', to: '7:00', timeZone: 'UTC' } }, '/body/quietHours/to'],
    [{ channels: [], quietHours: { from: '24:00', to: '07:00', timeZone: 'UTC' } }, '/body/quietHours/from'],
    [{ channels: [], quietHours: { from: '22:00', to: '22:00', timeZone: 'UTC' } }, '/body/quietHours/to'],
    [{ channels: [], quietHours: { from: '22:00', to: '07:00', timeZone: 'Mars/Olympus' } }, '/body/quietHours/timeZone'],
    [{ channels: [], quietHours: { from: '22:00', to: '07:00', timeZone: 'UTC+3' } }, '/body/quietHours/timeZone'],
    [{ channels: [], quietHours: { from: '22:00', to: '07:00' } }, '/body/quietHours'],
    [{ channels: [], quietHours: null, extra: true }, '/body/extra']
  ]
  for (const [body, path] of cases) {
    const res = await call(server, user, 'PUT', '/api/me/notifications', body)
    t.equal(res.statusCode, 400, `${JSON.stringify(body).slice(0, 100)}: ${res.body.slice(0, 300)}`)
    t.equal(res.json().code, 'VALIDATION_ERROR')
    t.ok(res.json().details.issues.some((issue: { path: string }) => issue.path === path), `names ${path}: ${JSON.stringify(res.json().details.issues)}`)
  }
  t.same((await call(server, user, 'GET', '/api/me/notifications')).json(), { channels: [], quietHours: null }, 'nothing saved')
  t.equal((await call(server, null, 'GET', '/api/me/notifications')).statusCode, 401)
  t.equal((await call(server, null, 'PUT', '/api/me/notifications', { channels: [] })).statusCode, 401)
})

t.test('backups hold the settings, channels and reminders; the queue\'s own schema is left out, the scan makes its jobs again', async t => {
  const server = await build(t)
  const tables = (await dataTables(server.sql)).map(table => table.name)
  for (const name of ['notification_settings', 'notification_channels', 'reminder_deliveries']) t.ok(tables.includes(name), `${name} is backed up`)
  t.notOk(tables.some(name => /job|graphile/.test(name)), 'no table of the queue')
})

t.test('every PUT counts against the account\'s limit: each may send messages where the caller chooses', async t => {
  const server = await build(t, { env: { JOB_WORKER: 'off', AUTH_RATE_LIMIT_MAX: '2' } })
  const user = await register(server)
  for (let i = 0; i < 2; i++) t.equal((await call(server, user, 'PUT', '/api/me/notifications', { channels: [] })).statusCode, 200)
  const limited = await call(server, user, 'PUT', '/api/me/notifications', { channels: [] })
  t.equal(limited.statusCode, 429)
  t.equal(limited.json().code, 'RATE_LIMITED')
  t.ok(Number(limited.headers['retry-after']) >= 1)
  t.equal((await call(server, user, 'GET', '/api/me/notifications')).statusCode, 200, 'reading is not limited')
})
