import t, { type Test } from 'tap'
import { build, call, familyOf, household, register } from './helper'
import { allowingTwin, loopbackName } from './outbound-helpers'
import { NEVER_HOSTS, ODD_URLS, PRIVATE_HOSTS, PUBLIC_HOSTS } from './outbound-forms'
import { until } from './reminder-receivers'
import { webhookReceiver } from './webhook-receiver'

// Webhooks through the API: made, listed, refused, deleted; and the rule for
// private addresses, at creation and at each delivery.

const OPEN = { REGISTRATION: 'open' }

t.test('an owner makes a webhook: its secret once, then listed, read and deleted without it', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const familyId = familyOf(owner)
  const made = await call(app, owner, 'POST', `/api/families/${familyId}/webhooks`, { url: 'https://hooks.example.org/child', events: ['measurement', 'visit'] })
  t.equal(made.statusCode, 201, made.body)
  const hook = made.json()
  t.match(hook.secret, /^whsec_[A-Za-z0-9+/]{43}=$/, 'whsec_ and base64 of 32 bytes')
  t.equal(Buffer.from(hook.secret.slice(6), 'base64').length, 32)
  t.equal(made.headers.location, `/api/families/${familyId}/webhooks/${hook.id}`)
  t.match(hook, { url: 'https://hooks.example.org/child', events: ['measurement', 'visit'], enabled: true, failures: 0, lastError: null, disabledAt: null, lastDeliveryAt: null })
  t.type(hook.cursor, 'string')
  const again = await call(app, owner, 'POST', `/api/families/${familyId}/webhooks`, { url: 'http://hooks.example.org/all' })
  t.equal(again.json().events, null, 'every kind when events is left out')
  t.not(again.json().secret, hook.secret, 'a secret of its own')

  const list = await call(app, owner, 'GET', `/api/families/${familyId}/webhooks`)
  t.equal(list.statusCode, 200)
  t.equal(list.json().meta.total, 2)
  t.same(list.json().data.map((item: any) => item.id), [hook.id, again.json().id])
  t.notOk(list.body.includes('whsec_'), 'the list never shows a secret')
  const one = await call(app, owner, 'GET', `/api/families/${familyId}/webhooks/${hook.id}`)
  t.equal(one.statusCode, 200)
  t.notOk('secret' in one.json(), 'nor does the webhook alone')
  const { secret: _secret, ...shown } = hook
  t.same(one.json(), shown)

  t.equal((await call(app, owner, 'DELETE', `/api/families/${familyId}/webhooks/${hook.id}`)).statusCode, 204)
  t.equal((await call(app, owner, 'GET', `/api/families/${familyId}/webhooks/${hook.id}`)).statusCode, 404)
  t.equal((await call(app, owner, 'DELETE', `/api/families/${familyId}/webhooks/${hook.id}`)).statusCode, 404)
  t.equal((await call(app, owner, 'GET', `/api/families/${familyId}/webhooks/${hook.id}/deliveries`)).statusCode, 404)
  t.equal((await call(app, owner, 'POST', `/api/families/${familyId}/webhooks/${hook.id}/enable`)).statusCode, 404)
  t.equal((await call(app, owner, 'GET', `/api/families/${familyId}/webhooks`)).json().meta.total, 1)
})

t.test('bad input is a 400 naming the field, and nothing is made', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const url = `/api/families/${familyOf(owner)}/webhooks`
  const cases: Array<[unknown, string]> = [
    [{ url: 'https://hooks.example.org/x', events: ['measurement', 'sunshine'] }, '/body/events/1'],
    [{ url: 'https://hooks.example.org/x', events: [] }, '/body/events'],
    [{ url: 'https://hooks.example.org/x', events: ['visit', 'visit'] }, '/body/events'],
    [{ url: 'ftp://hooks.example.org/x' }, '/body/url'],
    [{ url: 'not a url' }, '/body/url'],
    [{}, '/body/url'],
    [{ url: 'https://hooks.example.org/x', secret: 'mine' }, '/body/secret']
  ]
  for (const [body, path] of cases) {
    const res = await call(app, owner, 'POST', url, body)
    t.equal(res.statusCode, 400, JSON.stringify(body))
    t.equal(res.json().code, 'VALIDATION_ERROR')
    t.ok(res.json().details.issues.some((issue: any) => issue.path === path), `${JSON.stringify(body)}: ${path} in ${res.body}`)
  }
  const [{ count }] = await app.sql`select count(*)::int as count from webhooks`
  t.equal(count, 0)
})

t.test('owners only: members and viewers get 403, another family\'s webhook is not found', async t => {
  const app = await build(t, { env: OPEN })
  const { owner, familyId, member, viewer } = await household(app, { member: 'member', viewer: 'viewer' })
  const hook = (await call(app, owner, 'POST', `/api/families/${familyId}/webhooks`, { url: 'https://hooks.example.org/a' })).json()
  for (const user of [member, viewer]) {
    t.equal((await call(app, user, 'POST', `/api/families/${familyId}/webhooks`, { url: 'https://hooks.example.org/b' })).statusCode, 403)
    t.equal((await call(app, user, 'GET', `/api/families/${familyId}/webhooks`)).statusCode, 403)
    t.equal((await call(app, user, 'GET', `/api/families/${familyId}/webhooks/${hook.id}/deliveries`)).statusCode, 403)
    t.equal((await call(app, user, 'DELETE', `/api/families/${familyId}/webhooks/${hook.id}`)).statusCode, 403)
  }
  const other = await register(app)
  const otherFamily = familyOf(other)
  t.equal((await call(app, other, 'GET', `/api/families/${otherFamily}/webhooks/${hook.id}`)).statusCode, 404, 'looked up in the caller\'s own family')
  t.equal((await call(app, other, 'DELETE', `/api/families/${otherFamily}/webhooks/${hook.id}`)).statusCode, 404)
  t.equal((await call(app, other, 'GET', `/api/families/${familyId}/webhooks`)).statusCode, 403)
  t.equal((await call(app, owner, 'GET', `/api/families/${familyId}/webhooks/${hook.id}`)).statusCode, 200, 'still there')
})

t.test('at most 10 webhooks a family', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const url = `/api/families/${familyOf(owner)}/webhooks`
  const made = await Promise.all(Array.from({ length: 12 }, async (_, i) => (await call(app, owner, 'POST', url, { url: `https://hooks.example.org/${i}` })).statusCode))
  t.same(made.sort(), [...Array(10).fill(201), 409, 409], 'ten made, the others refused, even at once')
  const refused = await call(app, owner, 'POST', url, { url: 'https://hooks.example.org/eleven' })
  t.equal(refused.statusCode, 409)
  t.equal(refused.json().code, 'CONFLICT')
})

t.test('a family deleted takes its webhooks and their logs with it', async t => {
  const app = await build(t, { env: OPEN })
  const owner = await register(app)
  const family = (await call(app, owner, 'POST', '/api/families', { name: 'Short-lived' })).json()
  const hook = (await call(app, owner, 'POST', `/api/families/${family.id}/webhooks`, { url: 'https://hooks.example.org/gone' })).json()
  await app.sql`insert into webhook_deliveries (webhook_id, change_cursor, status_code, duration_ms) values (${hook.id}, 'c', 204, 3)`
  t.equal((await call(app, owner, 'DELETE', `/api/families/${family.id}`)).statusCode, 204)
  const [row] = await app.sql`select (select count(*) from webhooks)::int as hooks, (select count(*) from webhook_deliveries)::int as log`
  t.same(row, { hooks: 0, log: 0 })
})

/** An instance that follows the private rule and one on its database that allows private addresses, an owner and the route of the owner's webhooks. */
async function twoInstances (t: Test) {
  const strict = await build(t, { env: OPEN })
  const owner = await register(strict)
  return { strict, allowing: await allowingTwin(t, strict, OPEN), owner, url: `/api/families/${familyOf(owner)}/webhooks` }
}

t.test('private addresses: refused at creation unless WEBHOOK_ALLOW_PRIVATE=true, and again at each delivery', async t => {
  const receiver = await webhookReceiver(t)
  // The strict instance runs the worker; a second instance on the same database allows private addresses and runs none.
  const strict = await build(t, { env: { ...OPEN, JOB_WORKER: 'on', WEBHOOK_RETRY_MS: '100' } })
  const owner = await register(strict)
  const familyId = familyOf(owner)
  for (const url of [`${receiver.origin}/hook`, 'http://localhost:8123/api/webhook/x', 'http://[::1]:8123/x', 'http://0.0.0.0:8123/x', 'http://169.254.169.254/latest', 'http://127.1.2.3/x']) {
    const res = await call(strict, owner, 'POST', `/api/families/${familyId}/webhooks`, { url })
    t.equal(res.statusCode, 400, url)
    t.match(res.json().details.issues, [{ path: '/body/url', message: /must not be sent to: .*refused unless WEBHOOK_ALLOW_PRIVATE=true/ }], url)
  }
  // A name that resolves to this host, judged once resolved.
  const hostname = await loopbackName(t)
  const port = new URL(receiver.origin).port
  const named = await call(strict, owner, 'POST', `/api/families/${familyId}/webhooks`, { url: `http://${hostname}:${port}/named` })
  t.equal(named.statusCode, 400, named.body)
  t.match(named.json().details.issues, [{ path: '/body/url', message: `must not be sent to: ${hostname} resolves to 127.0.0.1, a loopback address, refused unless WEBHOOK_ALLOW_PRIVATE=true` }])
  t.equal((await strict.sql`select count(*)::int as n from webhooks`)[0].n, 0, 'none made')
  t.same(receiver.received, [], 'nothing sent')

  const allowing = await allowingTwin(t, strict, OPEN)
  const made = await call(allowing, owner, 'POST', `/api/families/${familyId}/webhooks`, { url: `${receiver.origin}/hook` })
  t.equal(made.statusCode, 201, 'allowed there')
  const byName = await call(allowing, owner, 'POST', `/api/families/${familyId}/webhooks`, { url: `http://${hostname}:${port}/named` })
  t.equal(byName.statusCode, 201, 'a name too')
  const mapped = await call(allowing, owner, 'POST', `/api/families/${familyId}/webhooks`, { url: `http://[::ffff:7f00:1]:${port}/mapped` })
  t.equal(mapped.statusCode, 201, 'and an IPv6 form of 127.0.0.1')
  const child = await call(strict, owner, 'POST', '/api/children', { name: 'Ada', dateOfBirth: '2024-01-01', sex: 'female' })
  t.equal(child.statusCode, 201)
  const log = async (hook: any) => (await call(strict, owner, 'GET', `/api/families/${familyId}/webhooks/${hook.json().id}/deliveries`)).json()
  for (const [hook, reason] of [
    [made, /^127\.0\.0\.1 is a loopback address, refused unless WEBHOOK_ALLOW_PRIVATE=true$/],
    [byName, new RegExp(`^${hostname} resolves to 127\\.0\\.0\\.1, a loopback address, refused unless WEBHOOK_ALLOW_PRIVATE=true$`)],
    [mapped, /^::ffff:7f00:1 carries 127\.0\.0\.1, a loopback address, refused unless WEBHOOK_ALLOW_PRIVATE=true$/]
  ] as const) {
    await until(async () => (await log(hook)).meta.total >= 2, 20_000, 'two refused attempts')
    const attempts = (await log(hook)).data
    t.ok(attempts.every((item: any) => item.statusCode === null && reason.test(item.error)), JSON.stringify(attempts[0]))
  }
  t.equal(receiver.arrived, 0, 'the strict worker sent nothing to 127.0.0.1, by address, name or IPv6 form')
  const hook = (await call(strict, owner, 'GET', `/api/families/${familyId}/webhooks/${made.json().id}`)).json()
  t.ok(hook.failures >= 2 && hook.failingSince !== null && /loopback/.test(hook.lastError), 'the owner sees why')
})

t.test('every spelling of a private address is refused at creation unless WEBHOOK_ALLOW_PRIVATE=true; multicast and reserved ones always', async t => {
  const { strict, allowing, owner, url } = await twoInstances(t)
  for (const [host, what] of PRIVATE_HOSTS) {
    const refused = await call(strict, owner, 'POST', url, { url: `http://${host}:8123/hook` })
    t.equal(refused.statusCode, 400, host)
    t.match(refused.json().details.issues, [{ path: '/body/url', message: what }], host)
    const made = await call(allowing, owner, 'POST', url, { url: `http://${host}:8123/hook` })
    t.equal(made.statusCode, 201, `${host} with WEBHOOK_ALLOW_PRIVATE=true`)
    await call(allowing, owner, 'DELETE', `${url}/${made.json().id}`)
  }
  for (const [host, what] of NEVER_HOSTS) {
    for (const app of [strict, allowing]) {
      const refused = await call(app, owner, 'POST', url, { url: `http://${host}:8123/hook` })
      t.equal(refused.statusCode, 400, host)
      t.match(refused.json().details.issues, [{ path: '/body/url', message: new RegExp(`${what.source}.*never sent to`) }], host)
    }
  }
  for (const host of PUBLIC_HOSTS) {
    const made = await call(strict, owner, 'POST', url, { url: `http://${host}/hook` })
    t.equal(made.statusCode, 201, host)
    await call(strict, owner, 'DELETE', `${url}/${made.json().id}`)
  }
  t.equal((await strict.sql`select count(*)::int as n from webhooks`)[0].n, 0)
})

t.test('a URL the service cannot parse is a 400 naming the field, never a 500, whatever WEBHOOK_ALLOW_PRIVATE says', async t => {
  const { strict, allowing, owner, url } = await twoInstances(t)
  for (const odd of ODD_URLS) {
    for (const app of [strict, allowing]) {
      const res = await call(app, owner, 'POST', url, { url: odd })
      t.equal(res.statusCode, 400, JSON.stringify(odd))
      t.equal(res.json().code, 'VALIDATION_ERROR')
      t.ok(res.json().details.issues.some((issue: any) => issue.path === '/body/url'), res.body)
    }
  }
  t.equal((await strict.sql`select count(*)::int as n from webhooks`)[0].n, 0, 'none made')
})
