import t from 'tap'
import webpush from 'web-push'
import { build, call, familyOf, register, type App, type Pair } from './helper'
import { allowingTwin, loopbackName } from './outbound-helpers'
import { NEVER_HOSTS, PRIVATE_HOSTS } from './outbound-forms'
import { pushService, type PushService } from './push-service'
import { until } from './reminder-receivers'
import { addChild, addVaccine, setChannels, spelled, utcDays } from './reminder-data'

async function app (t: Parameters<typeof build>[0], env: Record<string, string> = {}): Promise<App> {
  return build(t, { env: { REGISTRATION: 'open', JOB_WORKER: 'on', WEBHOOK_ALLOW_PRIVATE: 'true', ...env } })
}

async function servicePair (t: Parameters<typeof build>[0], server: App): Promise<PushService> {
  const user = await register(server)
  const key = (await call(server, user, 'GET', '/api/push/public-key')).json().publicKey as string
  return pushService(t, key)
}

function messages (service: PushService): Array<{ title: string, body: string }> {
  return service.received.map(message => JSON.parse(message.plaintext))
}

/** A reminder due for the user\'s only channel, sent until given up: the attempts it took. */
async function attemptsBeforeGivingUp (server: App, user: Pair): Promise<number> {
  const days = await utcDays(server)
  const child = await addChild(server, user, familyOf(user), 'Ines Alves', days.birth)
  await addVaccine(server, user, child, { name: 'HPV', date: days.lastYear, doseNumber: 1, nextDueDate: days.yesterday })
  await server.reminders.scanSoon()
  await until(async () => (await server.sql`select status from reminder_deliveries`)[0]?.status === 'given_up', 30_000, 'giving up')
  const [row] = await server.sql`select attempts from reminder_deliveries`
  return row.attempts
}

t.test('a browser\'s subscription gets its test message and its reminders by Web Push, encrypted and signed', async t => {
  const server = await app(t)
  const service = await servicePair(t, server)
  const days = await utcDays(server)
  const user = await register(server)
  const child = await addChild(server, user, familyOf(user), 'Zoë Sørensen', days.birth)
  await addVaccine(server, user, child, { name: 'MMR', date: days.lastYear, doseNumber: 1, nextDueDate: days.today })

  const settings = await setChannels(server, user, [{ type: 'webpush', subscription: service.subscription }])
  t.same(settings.channels[0].subscription, service.subscription, 'the subscription as the browser gave it')
  t.same(service.refused, [], 'every message passed the push service\'s checks')
  t.match(messages(service)[0], { title: 'Child health: test message' })

  await until(() => service.received.length === 2, 30_000, 'the reminder')
  t.same(messages(service)[1], { title: 'Reminder for Zoë', body: `Zoë: MMR vaccine dose 2 on ${spelled(days.today)}` })
  t.same(service.refused, [])
})

t.test('a subscription the push service says is gone is given up at once; a bad or local subscription is refused', async t => {
  const server = await app(t, { REMINDER_RETRY_MS: '500', REMINDER_ATTEMPTS: '5' })
  const service = await servicePair(t, server)
  const user = await register(server)
  await setChannels(server, user, [{ type: 'webpush', subscription: service.subscription }])
  service.failure = { status: 410, text: 'push subscription has unsubscribed or expired' }
  t.equal(await attemptsBeforeGivingUp(server, user), 1, 'not tried again')
  const channel = (await call(server, user, 'GET', '/api/me/notifications')).json().channels[0]
  t.match(channel.lastFailure, { gaveUp: true, reason: 'The push service answered 410 (the subscription is gone)' })
  t.notOk(JSON.stringify(channel).includes('unsubscribed or expired'), 'the push service\'s text is never kept')

  const strict = await build(t, { env: { JOB_WORKER: 'off' } })
  const someone = await register(strict)
  const local = await call(strict, someone, 'PUT', '/api/me/notifications', { channels: [{ type: 'webpush', subscription: service.subscription }] })
  t.equal(local.statusCode, 400, 'an endpoint on this host, without WEBHOOK_ALLOW_PRIVATE')
  t.equal(local.json().details.issues[0].path, '/body/channels/0/subscription/endpoint')
  const notAPoint = { ...service.subscription, endpoint: 'https://push.example.org/x', keys: { ...service.subscription.keys, p256dh: 'B' + 'a'.repeat(86) } }
  const bad = await call(strict, someone, 'PUT', '/api/me/notifications', { channels: [{ type: 'webpush', subscription: notAPoint }] })
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().details.issues[0].path, '/body/channels/0/subscription')
  t.match(bad.json().details.issues[0].message, /p256dh/)
})

t.test('a push endpoint on this host or a private network: refused at saving, and at each send when saved where private addresses were allowed', async t => {
  const { publicKey, privateKey } = webpush.generateVAPIDKeys()
  const keys = { REGISTRATION: 'open', VAPID_PUBLIC_KEY: publicKey, VAPID_PRIVATE_KEY: privateKey }
  // The strict instance runs the worker; a second one on the same database allows private addresses and runs none.
  const strict = await build(t, { env: { ...keys, JOB_WORKER: 'on' } })
  const allowing = await allowingTwin(t, strict, keys)
  const service = await pushService(t, publicKey)
  const { port } = new URL(service.origin)
  const user = await register(strict)
  const put = async (app: App, endpoint: string) => await call(app, user, 'PUT', '/api/me/notifications', { channels: [{ type: 'webpush', subscription: { ...service.subscription, endpoint } }] })

  const hostname = await loopbackName(t)
  const named = `http://${hostname}:${port}/push/subscription`
  const refused = await put(strict, named)
  t.equal(refused.statusCode, 400, refused.body)
  t.same(refused.json().details.issues, [{
    path: '/body/channels/0/subscription/endpoint',
    message: `must not be sent to: ${hostname} resolves to 127.0.0.1, a loopback address, refused unless WEBHOOK_ALLOW_PRIVATE=true`
  }])
  for (const [host, what] of [...PRIVATE_HOSTS, ...NEVER_HOSTS]) {
    const res = await put(strict, `http://${host}:${port}/push/subscription`)
    t.equal(res.statusCode, 400, host)
    t.equal(res.json().details.issues[0].path, '/body/channels/0/subscription/endpoint')
    t.match(res.json().details.issues[0].message, what, host)
  }
  t.same([service.received.length, service.refused.length], [0, 0], 'nothing reached the push service')

  const mapped = await put(allowing, `http://[::ffff:7f00:1]:${port}/push/subscription`)
  t.equal(mapped.statusCode, 200, `an IPv6 form of 127.0.0.1 is allowed with WEBHOOK_ALLOW_PRIVATE=true: ${mapped.body}`)
  t.equal((await put(allowing, named)).statusCode, 200, 'and so is the name')
  t.equal(service.received.length, 2, 'both test messages arrived')

  t.equal(await attemptsBeforeGivingUp(strict, user), 1, 'refused at the connection: not tried again')
  const channel = (await call(strict, user, 'GET', '/api/me/notifications')).json().channels[0]
  t.match(channel.lastFailure, { gaveUp: true, reason: `${hostname} resolves to 127.0.0.1, a loopback address, refused unless WEBHOOK_ALLOW_PRIVATE=true` })
  t.same([service.received.length, service.refused.length], [2, 0], 'the reminder never reached the push service')
})
