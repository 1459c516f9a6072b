import t from 'tap'
import { mkdirSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { writeBackup } from '../db/backup/backup'
import { plainArchive } from '../db/backup/archive'
import { createSql } from '../db/client'
import { verifyArchive } from '../db/backup/verify'
import { build, call, made, register, tempDir } from './helper'

const RUNS = 24
const BOUNDS = { stepMs: 20_000, totalMs: 40_000 }
/** Beyond the backup's own bound: a run still going then is one that hangs. */
const WATCHDOG_MS = BOUNDS.totalMs + 10_000
const quiet = { note: () => {}, tick: () => {} }

t.test('backups taken one after another while the service writes all finish, verify, and leave only their archives', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open' } })
  const dir = tempDir(t, 'child-health-backup-loop-')
  const roots = { uploads: path.join(dir, 'uploads'), avatars: path.join(dir, 'avatars') }
  const out = path.join(dir, 'backups')
  mkdirSync(out)

  const writers = await Promise.all([1, 2, 3].map(async () => {
    const pair = await register(app)
    const child = await made(app, pair, '/api/children', { name: 'Kim', dateOfBirth: '2020-01-01', sex: 'female' })
    return { pair, child }
  }))
  // Rows enough that each table's copy spans many reads from the socket.
  await app.db.sql`
    insert into measurements (child_id, measured_at, weight_kg, notes)
    select ${writers[0].child.id}, date '2024-01-01' + (i % 300), 20, repeat('n', (i * 37) % 400)
    from generate_series(1, 3000) i
  `
  let writing = true
  let writes = 0
  const writing$ = Promise.all(writers.map(async ({ pair, child }, index) => {
    while (writing) {
      const res = await call(app, pair, 'POST', `/api/children/${child.id as number}/measurements`, { measuredAt: '2024-02-01', weightKg: 21.5, notes: 'x'.repeat((writes * 13 + index) % 300) })
      if (res.statusCode !== 201) throw new Error(`a write answered ${res.statusCode}: ${res.body}`)
      writes += 1
    }
  }))

  const names: string[] = []
  try {
    for (let run = 1; run <= RUNS; run++) {
      const file = path.join(out, `child-health-run-${String(run).padStart(2, '0')}.tar`)
      // Each run on connections of its own, as each run of the command has.
      const sql = createSql(app.db.url, { max: 2, connection: { statement_timeout: BOUNDS.stepMs } })
      let watchdog: NodeJS.Timeout | undefined
      try {
        const hung = new Promise<never>((_resolve, reject) => {
          watchdog = setTimeout(() => reject(new Error(`backup ${run} did not finish within ${WATCHDOG_MS / 1000} s`)), WATCHDOG_MS)
        })
        await Promise.race([writeBackup(sql, file, { roots, serviceVersion: 'test', progress: quiet, bounds: BOUNDS }), hung])
      } finally {
        clearTimeout(watchdog)
        await sql.end({ timeout: 1 })
      }
      names.push(path.basename(file))
    }
  } finally {
    writing = false
    await writing$
  }
  t.equal(names.length, RUNS, `${RUNS} backups finished within their bound, while ${writes} measurements were written`)
  for (const name of names) {
    const manifest = await verifyArchive(await plainArchive(path.join(out, name)), quiet)
    const measurements = manifest.tables.find(table => table.name === 'measurements')
    if (measurements === undefined || measurements.rows < 3000) t.fail(`${name} holds every measurement`)
  }
  t.pass('every archive verifies against its manifest and holds the measurements')
  t.same(readdirSync(out).sort(), names, 'the folder holds the archives and nothing else')
})
