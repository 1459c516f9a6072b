import t, { type Test } from 'tap'
import { chmodSync, existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { createSql } from '../db/client'
import { tempDir, TEST_ENV, testDatabase } from './helper'
import { freePort } from '../db/embedded'
import { startNode, waitForHealth, type Run } from './processes'

/** Starts the real entry point with exactly the given environment. */
function start (env: Record<string, string>) {
  return startNode('server.ts', [], env)
}

/** A data folder of the test's own, and the settings of a server that keeps its embedded database there. */
async function embedded (t: Test): Promise<{ dataDir: string, port: number, env: Record<string, string> }> {
  const dataDir = tempDir(t, 'child-health-srv-')
  chmodSync(dataDir, 0o755)
  const port = await freePort()
  return { dataDir, port, env: { DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'warn' } }
}

function oneLine (t: Test, run: Run, pattern: RegExp): void {
  t.not(run.code, 0, 'exits with a non-zero code')
  const lines = run.stderr.split('\n').filter(line => line.trim() !== '' && !line.includes('ExperimentalWarning'))
  t.equal(lines.length, 1, 'says why in one line')
  t.match(lines[0], pattern)
  t.notMatch(run.stderr, /\n\s+at /, 'no stack trace')
}

const PRODUCTION = {
  NODE_ENV: 'production',
  BCRYPT_COST: '10',
  DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
  JWT_SECRET: 'a'.repeat(32),
  JWT_REFRESH_SECRET: 'b'.repeat(32)
}

t.test('a bad configuration stops the start with one line naming the setting', async t => {
  oneLine(t, await start({ ...PRODUCTION, JWT_SECRET: 'short' }).exited, /^Invalid configuration: JWT_SECRET must be at least 32 characters$/)
  oneLine(t, await start({ ...PRODUCTION, JWT_REFRESH_SECRET: PRODUCTION.JWT_SECRET }).exited, /^Invalid configuration: JWT_REFRESH_SECRET must differ from JWT_SECRET$/)
  const { DATABASE_URL: _omitted, ...noDatabase } = PRODUCTION
  oneLine(t, await start(noDatabase).exited, /^Invalid configuration: DATABASE_URL .*required in production$/)
  oneLine(t, await start({ ...PRODUCTION, PORT: 'http' }).exited, /^Invalid configuration: PORT must be a whole number/)
})

t.test('a failing migration stops the start naming the file and the error', async t => {
  const db = await testDatabase(t, { empty: true })
  await db.sql`create table users (id int)`
  const run = await start({ ...TEST_ENV, DATABASE_URL: db.url, DATA_DIR: tempDir(t, 'child-health-srv-') }).exited
  oneLine(t, run, /^Migration 00000000-000000-base-schema\.sql failed: relation "users" already exists$/)
  const tables = await db.sql`select table_name from information_schema.tables where table_schema = 'public' order by 1`
  t.same(tables.map(row => row.table_name), ['migrations', 'users'], 'the database is as it was before that file')
})

t.test('without a database setting it serves on an embedded PostgreSQL that keeps its data', async t => {
  const { dataDir, port, env } = await embedded(t)

  const first = start(env)
  t.teardown(() => { first.child.kill('SIGKILL') })
  const ms = await waitForHealth(`http://127.0.0.1:${port}`)
  t.ok(ms < 30000, `answers health (${ms} ms)`)
  const state = JSON.parse(readFileSync(path.join(dataDir, 'postgres.json'), 'utf8'))
  t.not(state.port, 5432, 'the embedded server has a port of its own')
  const url = `postgres://postgres:${state.password}@127.0.0.1:${state.port}/childhealth`
  const sql = createSql(url, { max: 1 })
  await sql`insert into families (name) values ('Kept')`
  await sql.end()
  const secrets = readFileSync(path.join(dataDir, 'secrets.json'), 'utf8')

  first.child.kill('SIGTERM')
  const stopped = await first.exited
  t.equal(stopped.code, 0, 'SIGTERM shuts down cleanly')
  t.notOk(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid')), 'the embedded database stopped')

  const second = start(env)
  t.teardown(() => { second.child.kill('SIGKILL') })
  await waitForHealth(`http://127.0.0.1:${port}`)
  const again = createSql(url, { max: 1 })
  const rows = await again`select name from families`
  await again.end()
  t.same(rows.map(row => row.name), ['Kept'], 'a second start reuses the same data')
  t.equal(readFileSync(path.join(dataDir, 'secrets.json'), 'utf8'), secrets, 'and the same secrets')
  second.child.kill('SIGINT')
  t.equal((await second.exited).code, 0, 'SIGINT shuts down cleanly too')
})

t.test('after a SIGKILL the next start takes over the embedded database left behind', async t => {
  const { dataDir, port, env } = await embedded(t)

  const first = start(env)
  await waitForHealth(`http://127.0.0.1:${port}`)
  first.child.kill('SIGKILL')
  await first.exited
  t.ok(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid')), 'PostgreSQL outlived the killed server')

  const second = start(env)
  t.teardown(() => { second.child.kill('SIGKILL') })
  await waitForHealth(`http://127.0.0.1:${port}`)
  t.pass('the next start serves again')
  second.child.kill('SIGTERM')
  t.equal((await second.exited).code, 0)
  t.notOk(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid')), 'and nothing is left running')
})
