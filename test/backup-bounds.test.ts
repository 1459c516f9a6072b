import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, utimesSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { createSql, type Sql } from '../db/client'
import { TEST_ENV, tempDir, testDatabase } from './helper'

const ROOT = path.join(__dirname, '..')
const ARCHIVE = /^child-health-\d{8}-\d{6}\.tar$/

interface Run { code: number | null, stderr: string }

function cli (args: string[], env: Record<string, string>, onStderr: (text: string, child: ReturnType<typeof spawn>) => void = () => {}): Promise<Run> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'cli.ts'), ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'ignore', 'pipe']
  })
  const run: Run = { code: null, stderr: '' }
  child.stderr.on('data', chunk => {
    run.stderr += chunk
    onStderr(run.stderr, child)
  })
  return new Promise(resolve => child.on('exit', code => { run.code = code; resolve(run) }))
}

async function instance (t: Test, env: Record<string, string> = {}): Promise<{ sql: Sql, url: string, env: Record<string, string>, folder: string }> {
  const db = await testDatabase(t)
  const dir = tempDir(t, 'child-health-backup-bounds-')
  const folder = path.join(dir, 'backups')
  await db.sql`insert into families (name) values ('Lovelace')`
  return {
    sql: db.sql,
    url: db.url,
    folder,
    env: { ...TEST_ENV, DATABASE_URL: db.url, DATA_DIR: dir, UPLOAD_DIR: path.join(dir, 'uploads'), AVATAR_DIR: path.join(dir, 'avatars'), ...env }
  }
}

/** Holds an access exclusive lock on `table` from a connection of its own until the returned function is called: a copy of it waits. */
async function locked (t: Test, url: string, table: string): Promise<() => Promise<void>> {
  const sql = createSql(url, { max: 1 })
  const reserved = await sql.reserve()
  await reserved`begin`
  await reserved.unsafe(`lock table ${table} in access exclusive mode`)
  let released = false
  const release = async (): Promise<void> => {
    if (released) return
    released = true
    await reserved`rollback`
    reserved.release()
    await sql.end({ timeout: 1 })
  }
  t.teardown(release)
  return release
}

t.test('a step that waits past BACKUP_STEP_TIMEOUT_MS ends the backup with exit code 3, naming the step, and leaves no file', async t => {
  const { url, env, folder } = await instance(t, { BACKUP_STEP_TIMEOUT_MS: '1500' })
  const release = await locked(t, url, 'families')
  const run = await cli(['backup', '--out', folder, '--keep', '2'], env)
  await release()
  t.equal(run.code, 3, 'exit code 3', { stderr: run.stderr })
  t.match(run.stderr, /backup: copying the table families did not finish within 1\.5 s; nothing was written/, 'the message names the step and the bound')
  t.same(readdirSync(folder), [], 'no archive, no partial file, no spool')
})

t.test('a backup past BACKUP_TIMEOUT_MS ends with exit code 3 even while its connection waits, and leaves no file', async t => {
  const { url, env, folder } = await instance(t, { BACKUP_STEP_TIMEOUT_MS: '600000', BACKUP_TIMEOUT_MS: '2000' })
  const release = await locked(t, url, 'families')
  const run = await cli(['backup', '--out', folder, '--keep', '2'], env)
  await release()
  t.equal(run.code, 3, 'exit code 3', { stderr: run.stderr })
  t.match(run.stderr, /backup: the whole backup did not finish within 2 s; nothing was written/, 'the message names the overall bound')
  t.same(readdirSync(folder), [], 'no archive, no partial file, no spool')
})

t.test('bad bounds are refused before anything is written', async t => {
  const { env, folder } = await instance(t, { BACKUP_STEP_TIMEOUT_MS: '0' })
  const run = await cli(['backup', '--out', folder, '--keep', '2'], env)
  t.not(run.code, 0, 'the command fails')
  t.match(run.stderr, /BACKUP_STEP_TIMEOUT_MS/, 'naming the setting')
  t.notOk(existsSync(folder), 'nothing was written')
})

for (const [signal, code] of [['SIGTERM', 143], ['SIGINT', 130]] as const) {
  t.test(`${signal} during a backup removes its temporary files and exits with ${code}`, async t => {
    const { url, env, folder } = await instance(t)
    const release = await locked(t, url, 'measurements')
    let sent = false
    // Once a table is copied, the partial archive is on disk and the copy of measurements waits.
    const run = await cli(['backup', '--out', folder, '--keep', '2'], env, (text, child) => {
      if (!sent && /backup: \w+: \d+ rows?/.test(text)) {
        sent = true
        t.ok(readdirSync(folder).some(name => name.endsWith('.tar.partial')), 'the partial archive is there while the backup runs')
        child.kill(signal)
      }
    })
    await release()
    t.ok(sent, 'the signal was sent mid-backup', { stderr: run.stderr })
    t.equal(run.code, code, `exit code ${code}`, { stderr: run.stderr })
    t.match(run.stderr, new RegExp(`backup: stopped by ${signal}; nothing was written`), 'saying why')
    t.same(readdirSync(folder), [], 'no archive, no partial file, no spool')
  })
}

t.test('--keep sweeps what killed runs left and keeps the newest archives', async t => {
  const { env, folder } = await instance(t)
  mkdirSync(folder)
  const old = new Date(Date.now() - 2 * 3600_000)
  const archives = ['child-health-20240101-000000.tar', 'child-health-20240102-000000.tar', 'child-health-20240103-000000.tar.enc']
  const stale = ['child-health-20240104-000000.tar.partial', 'child-health-20240104-000000.tar.spool', 'child-health-20240105-000000.tar.enc.partial']
  // A backup running beside this one writes its files as it goes: they are recent and stay.
  const running = ['child-health-20240106-000000.tar.partial', 'child-health-20240106-000000.tar.spool']
  const others = ['notes.txt', 'child-health-old.partial']
  for (const name of [...archives, ...stale, ...others]) {
    writeFileSync(path.join(folder, name), 'x')
    utimesSync(path.join(folder, name), old, old)
  }
  for (const name of running) writeFileSync(path.join(folder, name), 'x')
  const run = await cli(['backup', '--out', folder, '--keep', '2'], { ...env, BACKUP_TIMEOUT_MS: '3600000' })
  t.equal(run.code, 0, 'the backup succeeds', { stderr: run.stderr })
  for (const name of stale) t.match(run.stderr, `backup: removed ${name}, left by a backup that did not finish`, `says it removed ${name}`)
  const left = readdirSync(folder).sort()
  const made = left.filter(name => ARCHIVE.test(name) && !archives.includes(name))
  t.equal(made.length, 1, 'the new archive is there')
  t.same(left, [made[0], 'child-health-20240103-000000.tar.enc', ...running, ...others].sort(), 'the newest 2 archives, the running backup\'s files and the other names stay; stale partial and spool files are gone')
})
