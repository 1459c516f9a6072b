import t from 'tap'
import { build, call, familyOf, register, type App } from './helper'
import { pushService, type PushService } from './push-service'
import { until } from './reminder-receivers'
import { addChild, addVaccine, setChannels, utcDays } from './reminder-data'

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
  t.same(messages(service)[1], { title: 'Reminder for Zoë', body: `Zoë: MMR vaccine dose 2 on ${days.today}` })
  t.same(service.refused, [])
})

t.test('a subscription the push service says is gone is given up at once; a bad or local subscription is refused', async t => {
  const server = await app(t, { REMINDER_RETRY_MS: '500', REMINDER_ATTEMPTS: '5' })
  const service = await servicePair(t, server)
  const days = await utcDays(server)
  const user = await register(server)
  await setChannels(server, user, [{ type: 'webpush', subscription: service.subscription }])
  service.failure = { status: 410, text: 'push subscription has unsubscribed or expired' }
  const child = await addChild(server, user, familyOf(user), 'Ines Alves', days.birth)
  await addVaccine(server, user, child, { name: 'HPV', date: days.lastYear, doseNumber: 1, nextDueDate: days.yesterday })
  await server.reminders.scanSoon()
  await until(async () => (await server.sql`select status from reminder_deliveries`)[0]?.status === 'given_up', 30_000, 'giving up')
  const [row] = await server.sql`select attempts from reminder_deliveries`
  t.equal(row.attempts, 1, 'not tried again')
  const channel = (await call(server, user, 'GET', '/api/me/notifications')).json().channels[0]
  t.match(channel.lastFailure, { gaveUp: true, reason: /410.*unsubscribed or expired/ })

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
