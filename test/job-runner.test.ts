import t, { type Test } from 'tap'
import { createSql, type Sql } from '../db/client'
import { installQueue } from '../db/queue'
import { keepRunner } from '../plugins/job-runner'
import { testDatabase } from './helper'

// The job queue's connections are the queue's own (graphile-worker talks
// through pg): each step that opens them ends them before it returns, so
// nothing of the queue outlives a close, or a database ended after it.

const silent = { error: () => {}, warn: () => {}, info: () => {}, debug: () => {}, fatal: () => {}, trace: () => {}, child: () => silent, level: 'silent', silent: () => {} }

/** The test's one connection to its database. */
function watcher (t: Test, url: string): Sql {
  const sql = createSql(url, { max: 1 })
  t.teardown(async () => { await sql.end({ timeout: 1 }) })
  return sql
}

/**
 * The clients' connections to the database other than the watcher's, with
 * what they ran last. PostgreSQL's own workers (an autovacuum of the
 * database, say) are not the queue's.
 */
async function others (sql: Sql): Promise<string[]> {
  const rows = await sql<Array<{ query: string }>>`
    select left(query, 60) as query from pg_stat_activity
    where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'`
  return rows.map(row => row.query)
}

t.test('installing the queue leaves no connection open', async t => {
  const db = await testDatabase(t)
  const sql = watcher(t, db.url)
  for (let i = 0; i < 5; i++) {
    await installQueue(db.url, () => {})
    t.same(await others(sql), [], `after install ${i + 1}`)
  }
})

t.test('a stopped runner has ended its connections when its stop returns', async t => {
  const db = await testDatabase(t)
  const sql = watcher(t, db.url)
  for (let i = 0; i < 5; i++) {
    const runner = await keepRunner(db.url, db.sql, { capacity: { noop: 2 }, taskList: { noop: async () => {} } }, silent as never, () => {})
    const listening = async (): Promise<boolean> => (await others(sql)).some(query => query.startsWith('LISTEN'))
    for (let tries = 0; tries < 200 && !(await listening()); tries++) await new Promise(resolve => setTimeout(resolve, 25))
    t.ok(await listening(), `runner ${i + 1} listens for jobs on a connection of its own`)
    await runner.stop()
    t.same(await others(sql), [], `none of runner ${i + 1}'s connections is left`)
  }
})
