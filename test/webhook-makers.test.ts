import t, { type Test } from 'tap'
import { copyFileSync } from 'node:fs'
import path from 'node:path'
import type { LightMyRequestResponse } from 'fastify'
import { buildApp } from '../app'
import { migrate, migrationFiles, MIGRATIONS_DIR } from '../db/migrate'
import { build, call, changesSince, familyOf, join, register, tempDir, testConfig, testDatabase, type App, type Pair } from './helper'
import { until } from './reminder-receivers'
import { webhookReceiver, type Receiver } from './webhook-receiver'

// A webhook delivers only while its maker is an owner of the family: it
// stops at once, with the reason shown, whichever way the maker loses that,
// and a real receiver gets nothing after it.

const FAST = { REGISTRATION: 'open', JOB_WORKER: 'on', WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_MS: '200', WEBHOOK_RETRY_MAX_MS: '800' }
const DAY = '2024-03-01'

interface Family {
  app: App
  admin: Pair
  owner: Pair
  maker: Pair
  familyId: number
  childId: number
}

/** A family with two owners: the one who made it, and the maker of the webhook under test. */
async function family (app: App, admin: Pair): Promise<Family> {
  const owner = await register(app)
  const maker = await register(app)
  const familyId = familyOf(owner)
  await join(app, owner, familyId, maker, 'owner')
  const child = await call(app, owner, 'POST', '/api/children', { name: 'Ilse', dateOfBirth: '2023-01-01', sex: 'female' })
  return { app, admin, owner, maker, familyId, childId: child.json().id }
}

async function makeWebhook (f: Family, by: Pair, receiver: Receiver, path: string) {
  const res = await call(f.app, by, 'POST', `/api/families/${f.familyId}/webhooks`, { url: `${receiver.origin}${path}` })
  if (res.statusCode !== 201) throw new Error(`webhook answered ${res.statusCode}: ${res.body}`)
  receiver.secrets.set(path, res.json().secret)
  return res.json()
}

async function measure (f: Family, weightKg: number): Promise<void> {
  const res = await call(f.app, f.owner, 'POST', `/api/children/${f.childId}/measurements`, { measuredAt: DAY, weightKg })
  if (res.statusCode !== 201) throw new Error(`measurement answered ${res.statusCode}: ${res.body}`)
}

/** Waits until a path has acknowledged every change of the family after `since`. */
async function delivered (f: Family, receiver: Receiver, path: string, since: string): Promise<void> {
  await until(async () => {
    const acknowledged = new Set(receiver.acknowledged(path))
    const { data } = await changesSince(f.app, f.owner, f.familyId, since)
    return data.length > 0 && data.every(change => acknowledged.has(change.cursor))
  }, 30_000, `every change at ${path}`)
}

/** Waits until no job of the webhook waits or runs. */
async function idle (app: App, webhookId: number): Promise<void> {
  await until(async () => (await app.sql`select 1 from graphile_worker.jobs where flags ? ${`webhook:${webhookId}`}`).length === 0, 30_000, 'the webhook\'s jobs done')
}

async function shown (f: Family, webhookId: number) {
  return (await call(f.app, f.owner, 'GET', `/api/families/${f.familyId}/webhooks/${webhookId}`)).json()
}

const member = (f: Family) => `/api/families/${f.familyId}/members/${f.maker.user.id}`
const LEFT = 'Its maker left the family'
const REMOVED = 'Its maker was removed from the family'
const DEMOTED = 'Its maker is no longer an owner of the family'

const WAYS: Array<{ name: string, reason: string, deleted?: boolean, act: (f: Family) => Promise<LightMyRequestResponse> }> = [
  { name: 'removed by another owner', reason: REMOVED, act: f => call(f.app, f.owner, 'DELETE', member(f)) },
  { name: 'leaves the family', reason: LEFT, act: f => call(f.app, f.maker, 'DELETE', member(f)) },
  { name: 'demoted to member', reason: DEMOTED, act: f => call(f.app, f.owner, 'PATCH', member(f), { role: 'member' }) },
  { name: 'demoted to viewer', reason: DEMOTED, act: f => call(f.app, f.owner, 'PATCH', member(f), { role: 'viewer' }) },
  { name: 'removed by an administrator', reason: REMOVED, act: f => call(f.app, f.admin, 'DELETE', `/api/admin/families/${f.familyId}/members/${f.maker.user.id}`) },
  { name: 'disabled by an administrator', reason: 'Its maker\'s account was disabled', act: f => call(f.app, f.admin, 'PATCH', `/api/admin/users/${f.maker.user.id}`, { disabled: true }) },
  { name: 'deleted by an administrator', reason: 'Its maker\'s account was deleted', deleted: true, act: f => call(f.app, f.admin, 'DELETE', `/api/admin/users/${f.maker.user.id}`) }
]

t.test('a webhook stops at once when its maker stops being an owner, whichever way, and its URL gets nothing more', async t => {
  const receiver = await webhookReceiver(t)
  const app = await build(t, { env: FAST })
  const admin = await register(app)
  for (const [i, way] of WAYS.entries()) {
    await t.test(way.name, async t => {
      const f = await family(app, admin)
      const kept = await makeWebhook(f, f.owner, receiver, `/${i}/kept`)
      const stopped = await makeWebhook(f, f.maker, receiver, `/${i}/stopped`)
      t.same(stopped.createdBy, { id: f.maker.user.id, name: f.maker.user.name }, 'the answer says who made it')
      await measure(f, 10)
      await delivered(f, receiver, `/${i}/stopped`, stopped.cursor)
      const listed = (await call(app, f.owner, 'GET', `/api/families/${f.familyId}/webhooks`)).json().data
      t.same(listed.map((hook: any) => [hook.id, hook.createdBy, hook.enabled]), [
        [kept.id, { id: f.owner.user.id, name: f.owner.user.name }, true],
        [stopped.id, { id: f.maker.user.id, name: f.maker.user.name }, true]
      ], 'the list says who made each')
      const before = receiver.received.filter(item => item.path === `/${i}/stopped`).length

      const acted = await way.act(f)
      t.ok(acted.statusCode < 300, `${way.name}: ${acted.statusCode}`)
      const after = await shown(f, stopped.id)
      t.match(after, { enabled: false, disabledAt: String, disabledReason: way.reason }, 'stopped at once, and it says why')
      t.same(after.createdBy, way.deleted === true ? null : { id: f.maker.user.id, name: f.maker.user.name })
      t.match(await shown(f, kept.id), { enabled: true, disabledAt: null, disabledReason: null }, 'the other owner\'s webhook goes on')

      await measure(f, 11)
      await measure(f, 12)
      await delivered(f, receiver, `/${i}/kept`, kept.cursor)
      await idle(app, stopped.id)
      t.equal(receiver.received.filter(item => item.path === `/${i}/stopped`).length, before, 'nothing reached the stopped webhook\'s URL after')
    })
  }
})

t.test('deliveries already queued and a batch in work stop too', async t => {
  const quick = await webhookReceiver(t)
  const slow = await webhookReceiver(t)
  slow.delay = 600
  // Jobs queued while no worker runs, then found stopped by the worker that starts after.
  const first = await build(t, { env: { ...FAST, JOB_WORKER: 'off' } })
  const f = await family(first, await register(first))
  const kept = await makeWebhook(f, f.owner, quick, '/kept')
  const stopped = await makeWebhook(f, f.maker, slow, '/stopped')
  for (const weight of [10, 11, 12]) await measure(f, weight)
  t.ok((await first.sql`select 1 from graphile_worker.jobs where flags ? ${`webhook:${stopped.id as number}`}`).length > 0, 'its deliveries wait in the queue')
  t.equal((await call(first, f.owner, 'PATCH', member(f), { role: 'member' })).statusCode, 200)
  const worker = await buildApp(testConfig(t, first.db.url, FAST))
  t.teardown(() => worker.close())
  await worker.ready()
  await delivered(f, quick, '/kept', kept.cursor)
  await idle(first, stopped.id)
  t.equal(slow.arrived, 0, 'the queued deliveries found it stopped')

  // A batch of changes in work: the attempt in flight ends, and no other is made.
  t.equal((await call(first, f.owner, 'PATCH', member(f), { role: 'owner' })).statusCode, 200)
  const again = await makeWebhook(f, f.maker, slow, '/again')
  await first.sql.begin(async tx => {
    await tx`select begin_change(null, ${f.owner.user.id}::integer)`
    await tx`insert into measurements (child_id, measured_at, weight_kg) select ${f.childId}, ${DAY}, w from generate_series(20, 24) w`
  })
  await until(() => slow.arrived === 1, 20_000, 'the first attempt in flight')
  t.equal((await call(first, f.owner, 'DELETE', member(f))).statusCode, 204)
  await delivered(f, quick, '/kept', kept.cursor)
  await idle(first, again.id)
  t.equal(slow.arrived, 1, 'only the attempt in flight reached the URL')
  t.equal(slow.received.length, 1)
})

t.test('the delivery itself refuses a webhook whose maker is not an owner, however that came about', async t => {
  const receiver = await webhookReceiver(t)
  const app = await build(t, { env: FAST })
  const f = await family(app, await register(app))
  const kept = await makeWebhook(f, f.owner, receiver, '/kept')
  const stopped = await makeWebhook(f, f.maker, receiver, '/stopped')
  // A demotion that no trigger sees, as a write with triggers off would make it.
  await app.sql.begin(async tx => {
    await tx`set local session_replication_role = replica`
    await tx`update family_members set role = 'viewer' where family_id = ${f.familyId} and user_id = ${f.maker.user.id}`
  })
  t.match(await shown(f, stopped.id), { enabled: true }, 'not stopped by the database')
  await measure(f, 10)
  await delivered(f, receiver, '/kept', kept.cursor)
  await idle(app, stopped.id)
  t.same(receiver.received.filter(item => item.path === '/stopped'), [], 'yet nothing is sent')
})

t.test('enabling again needs the maker to be an owner: 409 otherwise, and a maker owner again delivers what it missed', async t => {
  const receiver = await webhookReceiver(t)
  const app = await build(t, { env: FAST })
  const f = await family(app, await register(app))
  const hook = await makeWebhook(f, f.maker, receiver, '/hook')
  const enable = async () => await call(app, f.owner, 'POST', `/api/families/${f.familyId}/webhooks/${hook.id as number}/enable`)
  t.equal((await call(app, f.owner, 'PATCH', member(f), { role: 'member' })).statusCode, 200)
  await measure(f, 10)
  const refused = await enable()
  t.equal(refused.statusCode, 409)
  t.same(refused.json(), {
    error: 'The webhook\'s maker is no longer an owner of the family: make a new webhook to deliver to this URL', code: 'WEBHOOK_MAKER_NOT_OWNER', details: {}
  })
  t.match(await shown(f, hook.id), { enabled: false, disabledReason: DEMOTED }, 'still stopped, for the same reason')

  t.equal((await call(app, f.owner, 'PATCH', member(f), { role: 'owner' })).statusCode, 200)
  t.match(await shown(f, hook.id), { enabled: false }, 'an owner again, the maker finds it still stopped')
  const enabled = await enable()
  t.equal(enabled.statusCode, 200)
  t.match(enabled.json(), { enabled: true, disabledAt: null, disabledReason: null, createdBy: { id: f.maker.user.id } })
  await delivered(f, receiver, '/hook', hook.cursor)
  const { data } = await changesSince(app, f.owner, f.familyId, hook.cursor)
  t.same(receiver.acknowledged('/hook'), data.map(change => change.cursor), 'the changes made while it was stopped, in order')

  t.equal((await call(app, f.admin, 'DELETE', `/api/admin/users/${f.maker.user.id}`)).statusCode, 204)
  t.match(await shown(f, hook.id), { enabled: false, createdBy: null, disabledReason: 'Its maker\'s account was deleted' })
  t.equal((await enable()).statusCode, 409, 'a deleted maker\'s webhook never delivers again')
})

/** A demotion of the maker that holds its row until `commit`, and the request made meanwhile. */
async function duringDemotion (t: Test, f: Family, request: () => Promise<LightMyRequestResponse>): Promise<LightMyRequestResponse> {
  let commit!: () => void
  const committing = new Promise<void>(resolve => { commit = resolve })
  let demoting!: () => void
  const demoted = new Promise<void>(resolve => { demoting = resolve })
  const demotion = f.app.sql.begin(async tx => {
    await tx`select begin_family_change(${f.familyId}::integer, ${f.owner.user.id}::integer)`
    await tx`update family_members set role = 'member' where family_id = ${f.familyId} and user_id = ${f.maker.user.id}`
    demoting()
    await committing
  })
  await demoted
  const answer = request()
  await until(async () => (await f.app.sql`select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`).length > 0, 10_000, 'the request waiting for the maker')
  commit()
  await demotion
  t.pass('the demotion committed while the request waited')
  return await answer
}

t.test('a demotion that commits while a webhook is made or enabled is seen by it', async t => {
  const receiver = await webhookReceiver(t)
  const app = await build(t, { env: { ...FAST, JOB_WORKER: 'off' } })
  const f = await family(app, await register(app))
  const making = await duringDemotion(t, f, async () => await call(app, f.maker, 'POST', `/api/families/${f.familyId}/webhooks`, { url: `${receiver.origin}/late` }))
  t.equal(making.statusCode, 403, 'no webhook for a maker demoted meanwhile')
  t.equal((await app.sql`select count(*)::int as n from webhooks`)[0].n, 0)

  t.equal((await call(app, f.owner, 'PATCH', member(f), { role: 'owner' })).statusCode, 200)
  const hook = await makeWebhook(f, f.maker, receiver, '/hook')
  await app.sql`update webhooks set disabled_at = now(), disabled_reason = 'failing' where id = ${hook.id}`
  const enabling = await duringDemotion(t, f, async () => await call(app, f.owner, 'POST', `/api/families/${f.familyId}/webhooks/${hook.id as number}/enable`))
  t.equal(enabling.statusCode, 409, 'not enabled for a maker demoted meanwhile')
  t.equal(enabling.json().code, 'WEBHOOK_MAKER_NOT_OWNER')
  t.match(await shown(f, hook.id), { enabled: false })
})

t.test('the migration stops the webhooks whose maker was already no owner', async t => {
  const { sql } = await testDatabase(t, { empty: true })
  const dir = tempDir(t)
  const files = await migrationFiles()
  const own = files.indexOf('20261130-110000-webhook-makers.sql')
  for (const file of files.slice(0, own)) copyFileSync(path.join(MIGRATIONS_DIR, file), path.join(dir, file))
  await migrate(sql, { dir })
  const [family] = await sql`insert into families (name) values ('Before') returning id`
  const users = await sql`
    insert into users (email, name, password_hash, disabled)
    select 'u' || i || '@example.org', 'User ' || i, 'x', i = 4 from generate_series(1, 5) i
    returning id
  `
  const [owner, member, gone, disabled, stranger] = users.map(row => row.id as number)
  await sql`
    insert into family_members (family_id, user_id, role)
    values (${family.id}, ${owner}, 'owner'), (${family.id}, ${member}, 'member'), (${family.id}, ${disabled}, 'owner')
  `
  await sql`
    insert into webhooks (family_id, url, secret, created_by, epoch, after_xid, after_seq)
    select ${family.id}, 'https://hooks.example.org/' || maker, 's', maker, 'e', '0', 0
    from unnest(${[owner, member, gone, disabled, stranger]}::int[]) maker
  `
  await sql`delete from users where id = ${gone}`
  await migrate(sql)
  const hooks = await sql`select url, disabled_at is null as enabled, disabled_reason as reason from webhooks order by id`
  t.same(hooks.map(row => [row.url.split('/').pop(), row.enabled, row.reason]), [
    [String(owner), true, null],
    [String(member), false, DEMOTED],
    [String(gone), false, 'Its maker\'s account was deleted'],
    [String(disabled), false, DEMOTED],
    [String(stranger), false, DEMOTED]
  ])
})
