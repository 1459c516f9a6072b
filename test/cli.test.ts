import t, { type Test } from 'tap'
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { buildApp, type App } from '../app'
import { bearer, login, PASSWORD, TEST_ENV, testConfig, testDatabase } from './helper'
import { freePort } from '../db/embedded'
import { cli, healthy, startNode, succeeds, type Run } from './processes'

const NEW_PASSWORD = 'a brand new passphrase'

function errorLines (run: Run): string[] {
  return run.stderr.split('\n').filter(line => line.trim() !== '' && !line.includes('ExperimentalWarning') && !line.includes('--trace-warnings'))
}

function refused (t: Test, run: Run, pattern: RegExp): void {
  t.not(run.code, 0, 'exits with a non-zero code')
  const lines = errorLines(run)
  t.equal(lines.length, 1, 'says why in one line')
  t.match(lines[0], pattern, 'naming the problem')
}

async function appOn (t: Test, url: string): Promise<App> {
  const app = await buildApp(testConfig(t, url))
  t.teardown(() => app.close())
  await app.ready()
  return app
}

function tempDir (t: Test, prefix: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix))
  chmodSync(dir, 0o755)
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

t.test('create-admin makes an administrator who signs in through the real login route', async t => {
  const db = await testDatabase(t)
  const env = { ...TEST_ENV, DATABASE_URL: db.url, DATA_DIR: tempDir(t, 'child-health-cli-') }
  const created = await cli(['create-admin', '--email', 'Admin@Example.org', '--name', '  Ada  ', '--password-stdin'], env, `${PASSWORD}\n`)
  succeeds(t, created, 'create-admin with the password on stdin succeeds')
  t.match(created.stdout, /^created the administrator Admin@Example\.org \(id \d+\)\n$/, 'and says whom it created')

  const fromEnv = await cli(['create-admin', '--email', 'second@example.org', '--name', 'Bo'], { ...env, CHILD_HEALTH_PASSWORD: NEW_PASSWORD })
  succeeds(t, fromEnv, 'the password may come from CHILD_HEALTH_PASSWORD instead')

  const app = await appOn(t, db.url)
  const pair = await login(app, 'admin@example.org')
  t.equal(pair.user.role, 'admin', 'the account is an administrator')
  t.equal(pair.user.name, 'Ada', 'its name is trimmed as the API trims it')
  const me = await app.inject({ method: 'GET', url: '/api/me', headers: bearer(pair.accessToken) })
  t.equal(me.statusCode, 200, 'it reaches GET /api/me')
  t.same(me.json().families, [], 'and it belongs to no family yet')
  t.equal((await login(app, 'second@example.org', NEW_PASSWORD)).user.role, 'admin', 'the second administrator signs in too')
})

t.test('create-admin refuses bad input in one line and creates nothing', async t => {
  const db = await testDatabase(t)
  const env = { ...TEST_ENV, DATABASE_URL: db.url, DATA_DIR: tempDir(t, 'child-health-cli-') }
  const admin = (args: string[], input = `${PASSWORD}\n`, extra = {}): Promise<Run> => cli(['create-admin', ...args, '--password-stdin'], { ...env, ...extra }, input)
  succeeds(t, await admin(['--email', 'ada@example.org', '--name', 'Ada']), 'the first account is created')

  refused(t, await admin(['--email', 'ADA@example.org', '--name', 'Ada']), /^a user with the e-mail ADA@example\.org already exists$/)
  refused(t, await admin(['--email', 'b@example.org', '--name', 'B'], 'short\n'), /^the password must NOT have fewer than 8 bytes$/)
  refused(t, await admin(['--email', 'b@example.org', '--name', 'B'], `${'x'.repeat(73)}\n`), /^the password must NOT have more than 72 bytes$/)
  refused(t, await admin(['--email', 'not-an-email', '--name', 'B']), /^--email must match format "email"$/)
  refused(t, await admin(['--email', 'b@example.org']), /^--name is required$/)
  refused(t, await cli(['create-admin', '--email', 'b@example.org', '--name', 'B', '--password', PASSWORD], env), /^Unknown option '--password'/)
  refused(t, await cli(['create-admin', '--email', 'b@example.org', '--name', 'B'], env), /--password-stdin, or in CHILD_HEALTH_PASSWORD$/)
  refused(t, await cli(['create-admin', '--email', 'b@example.org', '--name', 'B'], { ...env, NODE_ENV: 'production', DATABASE_URL: '' }), /^Invalid configuration: DATABASE_URL/)

  const [{ count }] = await db.sql`select count(*)::int as count from users`
  t.equal(count, 1, 'only the first account exists')
})

t.test('reset-password sets a new password and signs out every session of the user', async t => {
  const db = await testDatabase(t)
  const env = { ...TEST_ENV, DATABASE_URL: db.url, DATA_DIR: tempDir(t, 'child-health-cli-') }
  succeeds(t, await cli(['create-admin', '--email', 'ada@example.org', '--name', 'Ada', '--password-stdin'], env, PASSWORD), 'an administrator is created')
  const app = await appOn(t, db.url)
  const first = await login(app, 'ada@example.org')
  const second = await login(app, 'ada@example.org')
  t.equal((await app.inject({ method: 'GET', url: '/api/me', headers: bearer(first.accessToken) })).statusCode, 200, 'signed in')

  const reset = await cli(['reset-password', '--email', 'ADA@example.org', '--password-stdin'], env, `${NEW_PASSWORD}\r\n`)
  succeeds(t, reset, 'reset-password succeeds')
  t.equal(reset.stdout, 'reset the password of ada@example.org and signed out every session of theirs\n', 'and says so')

  for (const pair of [first, second]) {
    const me = await app.inject({ method: 'GET', url: '/api/me', headers: bearer(pair.accessToken) })
    t.equal(me.statusCode, 401, 'an access token of an earlier session is refused')
    const refresh = await app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: pair.refreshToken } })
    t.equal(refresh.statusCode, 401, 'and so is its refresh token')
  }
  const old = await app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'ada@example.org', password: PASSWORD } })
  t.equal(old.json().code, 'INVALID_CREDENTIALS', 'the old password no longer works')
  const fresh = await login(app, 'ada@example.org', NEW_PASSWORD)
  t.equal((await app.inject({ method: 'GET', url: '/api/me', headers: bearer(fresh.accessToken) })).statusCode, 200, 'the new one does')

  refused(t, await cli(['reset-password', '--email', 'nobody@example.org', '--password-stdin'], env, NEW_PASSWORD), /^no user has the e-mail nobody@example\.org$/)
  refused(t, await cli(['reset-password', '--email', 'ada@example.org', '--password-stdin'], env, 'short'), /^the password must NOT have fewer than 8 bytes$/)
})

t.test('migrate applies the schema to an empty database, once', async t => {
  const db = await testDatabase(t, { empty: true })
  const env = { ...TEST_ENV, DATABASE_URL: db.url, DATA_DIR: tempDir(t, 'child-health-cli-') }
  const first = await cli(['migrate'], env)
  succeeds(t, first, 'migrate succeeds')
  t.match(first.stdout, /^applied \d+ migration\(s\)\n$/, 'and says how many it applied')
  const [{ found }] = await db.sql`select to_regclass('users') is not null as found`
  t.ok(found, 'the tables exist')
  t.equal((await cli(['migrate'], env)).stdout, 'the database is up to date\n', 'a second run applies nothing')
})

t.test('usage and unknown commands', async t => {
  const env = { ...TEST_ENV, DATA_DIR: tempDir(t, 'child-health-cli-') }
  const help = await cli(['--help'], env)
  succeeds(t, help, '--help succeeds')
  for (const command of ['create-admin', 'reset-password', 'migrate', 'backup', 'restore']) t.match(help.stdout, command, `and lists ${command}`)
  const none = await cli([], env)
  t.not(none.code, 0, 'no command is an error')
  t.match(none.stdout, /^usage:/, 'and shows the usage')
  refused(t, await cli(['frobnicate'], env), /^unknown command "frobnicate"/)
  refused(t, await cli(['migrate', 'extra'], env), /Unexpected argument 'extra'/)
})

t.test('on the embedded database, a command shares it with the running server, or starts and stops it alone', async t => {
  const dataDir = tempDir(t, 'child-health-cli-embedded-')
  const port = await freePort()
  const env = { ...TEST_ENV, DATA_DIR: dataDir }
  const base = `http://127.0.0.1:${port}`
  const { child: server, exited } = startNode('server.ts', [], { ...env, PORT: String(port), LOG_LEVEL: 'warn' })
  t.teardown(() => { server.kill('SIGKILL') })
  t.ok(await healthy(base, 60000), 'the server runs on its embedded database')
  const pidFile = path.join(dataDir, 'postgres', 'postmaster.pid')
  const postmaster = statSync(pidFile).mtimeMs

  const created = await cli(['create-admin', '--email', 'ada@example.org', '--name', 'Ada', '--password-stdin'], env, PASSWORD)
  succeeds(t, created, 'create-admin runs beside the server')
  const signIn = await fetch(`${base}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'ada@example.org', password: PASSWORD })
  })
  t.equal(signIn.status, 200, 'the running server sees the account the command created')
  const backup = await cli(['backup', '--out', path.join(dataDir, 'backup.tar')], env)
  succeeds(t, backup, 'a backup works while the server runs')
  t.ok(await healthy(base, 5000), 'the server still answers')
  t.equal(statSync(pidFile).mtimeMs, postmaster, 'on the same PostgreSQL, never restarted')

  server.kill('SIGTERM')
  t.equal((await exited).code, 0, 'the server stops cleanly')
  t.notOk(existsSync(pidFile), 'and its database with it')

  const alone = await cli(['reset-password', '--email', 'ada@example.org', '--password-stdin'], env, NEW_PASSWORD)
  succeeds(t, alone, 'without the server the command starts the database itself')
  t.notOk(existsSync(pidFile), 'and stops it when done')
})
