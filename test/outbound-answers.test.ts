import path from 'node:path'
import t from 'tap'
import { build, call, familyOf, register } from './helper'

// The answers that the places the service sends to gave before are not kept:
// the migration that drops them, run again on a database that holds some.

const MIGRATION = path.join(__dirname, '..', 'migrations', '20261130-130000-outbound-answers.sql')

t.test('a webhook attempt\'s answer and the text after a failing status of ntfy or a push service go; statuses and other reasons stay', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open' } })
  const owner = await register(app)
  const familyId = familyOf(owner)
  const hook = (await call(app, owner, 'POST', `/api/families/${familyId}/webhooks`, { url: 'https://hooks.example.org/x' })).json()
  const child = (await call(app, owner, 'POST', '/api/children', { name: 'Ada', dateOfBirth: '2024-01-01', sex: 'female' })).json()
  await app.sql`
    insert into webhook_deliveries (webhook_id, change_cursor, status_code, error, duration_ms, response_excerpt)
    values (${hook.id}, 'a', 503, 'the webhook answered 503', 3, 'down for maintenance'), (${hook.id}, 'b', 204, null, 2, 'thanks')
  `
  const reasons = [
    'ntfy answered 500: {"error":"topic unavailable"}',
    'The push service answered 410 (the subscription is gone): push subscription has unsubscribed or expired.',
    'The push service answered 429: Too many requests',
    'ntfy could not be reached: connect ECONNREFUSED 10.0.0.5:80',
    'the e-mail could not be sent: 550 No such mailbox'
  ]
  const channels = await app.sql`
    insert into notification_channels (user_id, position, type, target, target_key, verified_at, last_failure_at, last_failure_reason)
    select ${owner.user.id}, position, 'ntfy', '{}', 'key ' || position, now(), now(), reason
    from unnest(${reasons}::text[]) with ordinality as given (reason, position)
    returning id
  `
  await app.sql`
    insert into reminder_deliveries (user_id, channel_id, item_key, family_id, child_id, title, body, status, last_error)
    values (${owner.user.id}, ${channels[0].id}, 'item', ${familyId}, ${child.id}, 'title', 'body', 'given_up', ${reasons[0]})
  `
  await app.sql.file(MIGRATION)
  t.same((await app.sql`select status_code, error, response_excerpt from webhook_deliveries order by change_cursor`).map(row => ({ ...row })), [
    { status_code: 503, error: 'the webhook answered 503', response_excerpt: null },
    { status_code: 204, error: null, response_excerpt: null }
  ])
  t.same((await app.sql`select last_failure_reason as reason from notification_channels order by position`).map(row => row.reason), [
    'ntfy answered 500',
    'The push service answered 410 (the subscription is gone)',
    'The push service answered 429',
    reasons[3],
    reasons[4]
  ])
  t.same((await app.sql`select last_error from reminder_deliveries`).map(row => row.last_error), ['ntfy answered 500'])
})
