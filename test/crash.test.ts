import t from 'tap'
import { existsSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import sharp from 'sharp'
import { bearer, TEST_ENV, testDatabase } from './helper'
import { freePort } from '../db/embedded'
import { startNode, waitForHealth } from './processes'

function start (env: Record<string, string>) {
  return startNode('server.ts', [], env)
}

t.test('a server killed during a burst of multi-step writes leaves nothing half-written', async t => {
  const db = await testDatabase(t)
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'child-health-crash-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const env = {
    ...TEST_ENV, LOG_LEVEL: 'silent', REGISTRATION: 'open', DATABASE_URL: db.url, DATA_DIR: dataDir, PORT: String(port),
    UPLOAD_DIR: path.join(dataDir, 'uploads'), AVATAR_DIR: path.join(dataDir, 'avatars')
  }

  const first = start(env)
  t.teardown(() => { first.child.kill('SIGKILL') })
  await waitForHealth(base)
  const registered = await (await fetch(`${base}/api/auth/register`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'crash@example.org', password: 'a long password', name: 'Crash' })
  })).json() as { accessToken: string }
  const auth = bearer(registered.accessToken)
  const child = await (await fetch(`${base}/api/children`, {
    method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Kim', dateOfBirth: '2020-01-01', sex: 'female' })
  })).json() as { id: number }
  const png = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#c33' } }).png().toBuffer()

  let acknowledged = 0
  let running = true
  const burst = async (i: number): Promise<void> => {
    while (running) {
      try {
        const res = i % 2 === 0
          ? await fetch(`${base}/api/visits`, {
            method: 'POST',
            headers: { ...auth, 'content-type': 'application/json' },
            body: JSON.stringify({ childId: child.id, date: '2021-01-01', type: 'sick', measurement: { weightKg: 12 } })
          })
          : await (async () => {
            const form = new FormData()
            form.append('file', new Blob([png], { type: 'image/png' }), 'scan.png')
            return fetch(`${base}/api/children/${child.id}/attachments`, { method: 'POST', headers: auth, body: form })
          })()
        if (res.status === 201) acknowledged += 1
      } catch {
        return
      }
    }
  }
  const clients = Array.from({ length: 8 }, (_, i) => burst(i))
  // The kill comes once the burst is well under way, however busy the machine is.
  for (const end = Date.now() + 30_000; acknowledged <= 10 && Date.now() < end;) await new Promise(resolve => setTimeout(resolve, 50))
  await new Promise(resolve => setTimeout(resolve, 300))
  first.child.kill('SIGKILL')
  await first.exited
  running = false
  await Promise.all(clients)
  t.ok(acknowledged > 10, `${acknowledged} writes were acknowledged before the kill`)

  // Files the killed process left behind are as old as an hour by the next start.
  const uploadDir = path.join(dataDir, 'uploads')
  const planted = 'ab'.repeat(16) + '.png'
  writeFileSync(path.join(uploadDir, planted), png)
  const recent = 'cd'.repeat(16) + '.png'
  const anHourAgo = new Date(Date.now() - 61 * 60 * 1000)
  for (const name of readdirSync(uploadDir)) utimesSync(path.join(uploadDir, name), anHourAgo, anHourAgo)
  writeFileSync(path.join(uploadDir, recent), png)
  const stored = new Set((await db.sql<{ name: string }[]>`select stored_name as name from attachments`).map(row => row.name))
  const left = readdirSync(uploadDir).filter(name => !stored.has(name) && name !== recent)
  t.ok(left.includes(planted), `${left.length} files without a row before the restart, the kill's and one planted`)

  const second = start(env)
  t.teardown(() => { second.child.kill('SIGKILL') })
  await waitForHealth(base)

  const [{ lonely }] = await db.sql`select count(*) as lonely from visits v where not exists (select 1 from measurements m where m.visit_id = v.id)`
  t.equal(lonely, 0, 'no visit without its measurement')
  const rows = (await db.sql<{ name: string }[]>`select stored_name as name from attachments`).map(row => row.name)
  t.ok(rows.length > 0, `${rows.length} attachments were stored`)
  t.same(rows.filter(name => !existsSync(path.join(uploadDir, name))), [], 'no row without its file')

  let files: string[] = []
  for (let waited = 0; waited < 10000; waited += 100) {
    files = readdirSync(uploadDir).filter(name => name !== recent)
    if (files.every(name => rows.includes(name))) break
    await new Promise(resolve => setTimeout(resolve, 100))
  }
  t.same(files.filter(name => !rows.includes(name)), [], 'no file without its row once the sweep has run')
  t.ok(existsSync(path.join(uploadDir, recent)), 'a file younger than an hour is left alone: it may be an upload in flight')

  second.child.kill('SIGTERM')
  await second.exited
})
