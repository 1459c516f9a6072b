import t from 'tap'
import { buildApp } from '../app'
import { LOCKS } from '../db/locks'
import { testConfig, testDatabase } from './helper'

/**
 * A start registers the app while the database does its part (the
 * migrations, then the job queue's check): the app is ready, and a server
 * listens, only once both are done.
 */

const sleep = async (ms: number): Promise<void> => { await new Promise(resolve => setTimeout(resolve, ms)) }

t.test('the app is registered while the migrations wait, and is ready only once they are applied', async t => {
  const db = await testDatabase(t, { empty: true })
  // Another instance migrating: its lock holds this one's migrations back.
  const other = await db.sql.reserve()
  await other`select pg_advisory_lock(${LOCKS.migrations})`
  const app = await buildApp(testConfig(t, db.url))
  let ready = false
  const readying = app.ready().then(() => { ready = true })
  await sleep(500)
  t.equal(ready, false, 'not ready while the migrations wait')
  const [{ tables }] = await db.sql`select count(*)::int as tables from information_schema.tables where table_schema = 'public'`
  t.equal(tables, 0, 'nothing is applied meanwhile')
  const [{ queue }] = await db.sql`select count(*)::int as queue from pg_namespace where nspname = 'graphile_worker'`
  t.equal(queue, 0, 'and the job queue waits for them too')

  await other`select pg_advisory_unlock(${LOCKS.migrations})`
  other.release()
  await readying
  t.equal(ready, true, 'ready once the lock is free')
  const [{ applied }] = await db.sql`select count(*)::int as applied from migrations`
  t.ok(applied > 0, 'with the migrations applied')
  const [{ installed }] = await db.sql`select count(*)::int as installed from pg_namespace where nspname = 'graphile_worker'`
  t.equal(installed, 1, 'and the job queue installed')
  const health = await app.inject({ method: 'GET', url: '/api/health' })
  t.equal(health.statusCode, 200)
  await app.close()
})

t.test('a failing migration fails the app\'s readiness, naming the file', async t => {
  const db = await testDatabase(t, { empty: true })
  await db.sql`create table users (id int)`
  const app = await buildApp(testConfig(t, db.url))
  await t.rejects(async () => { await app.ready() }, /^Migration 00000000-000000-base-schema\.sql failed: relation "users" already exists$/)
  await app.close()
  const [{ queue }] = await db.sql`select count(*)::int as queue from pg_namespace where nspname = 'graphile_worker'`
  t.equal(queue, 0, 'the job queue is not installed on a database that failed to migrate')
})

t.test('an app closed before it is ready closes, with or without migrations', async t => {
  const db = await testDatabase(t)
  for (const migrate of [true, false]) {
    const app = await buildApp(testConfig(t, db.url), { db: { migrate } })
    const closed = await Promise.race([app.close().then(() => true), sleep(10_000).then(() => false)])
    t.ok(closed, `closed without waiting for a readiness that never comes (migrate: ${String(migrate)})`)
  }
})
