/**
 * Backups while the service writes: the service runs on an embedded
 * PostgreSQL, a few writers create measurements through the API without a
 * pause, and the backup command runs as systemd runs it (a process of its own,
 * `backup --out <folder> --keep 3`), one run after another. Each run has a
 * watchdog; a run it fires on is a hung run, killed with SIGKILL. At the end:
 * runs, backups a minute, the longest run, hung and failed runs, and every file
 * of the folder that is not a finished archive.
 *
 *   npm run bench:backup
 *   BACKUP_RUNS=30 BACKUP_WATCHDOG=60 npm run bench:backup
 *
 * The service and the command run from source (tsx), so nothing is built.
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readdirSync } from 'node:fs'
import path from 'node:path'
import { createSql } from '../db/client'
import { request } from './lib/api'
import { onCleanup, runBenchmark } from './lib/cleanup'
import { startDatabase } from './lib/database'
import { ROOT, baseEnv, startService } from './lib/service'

const RUNS = whole('BACKUP_RUNS', 18)
const WATCHDOG_S = whole('BACKUP_WATCHDOG', 90)
const WRITERS = 4
const ARCHIVE = /^child-health-\d{8}-\d{6}\.tar(\.enc)?$/

function whole (name: string, fallback: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a whole number of 1 or more`)
  return value
}

interface Run { ms: number, code: number | null, hung: boolean, tail: string }

/** One run of the backup command, killed when the watchdog fires. */
function backupOnce (env: Record<string, string>, folder: string, onHang: () => Promise<void>): Promise<Run> {
  const started = Date.now()
  const child = spawn(process.execPath, ['--import', 'tsx', 'cli.ts', 'backup', '--out', folder, '--keep', '3'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', chunk => { output += chunk })
  child.stderr.on('data', chunk => { output += chunk })
  let hung = false
  onCleanup('stopping the backup', async () => { if (child.exitCode === null) child.kill('SIGKILL') })
  const watchdog = setTimeout(() => {
    hung = true
    void onHang().finally(() => child.kill('SIGKILL'))
  }, WATCHDOG_S * 1000)
  return new Promise(resolve => child.on('exit', code => {
    clearTimeout(watchdog)
    resolve({ ms: Date.now() - started, code, hung, tail: output.trim().split('\n').slice(-3).join(' | ') })
  }))
}

async function main (): Promise<void> {
  process.env.BENCH_FROM_SOURCE = '1'
  const db = await startDatabase()
  const secrets = { JWT_SECRET: randomBytes(48).toString('base64url'), JWT_REFRESH_SECRET: randomBytes(48).toString('base64url') }
  const service = await startService(db.url, db.dir, { env: secrets })
  const dataDir = path.join(db.dir, 'service')
  const env = {
    ...baseEnv(),
    ...secrets,
    NODE_ENV: 'production',
    DATABASE_URL: db.url,
    DATA_DIR: dataDir,
    UPLOAD_DIR: path.join(dataDir, 'uploads'),
    AVATAR_DIR: path.join(dataDir, 'avatars'),
    GROWTH_DATA_DIR: path.join(dataDir, 'growth'),
    GROWTH_DATA_URL: 'http://127.0.0.1:9/'
  }
  const folder = path.join(db.dir, 'backups')
  const watcher = createSql(db.url, { max: 1 })

  // Writers: each a parent of a family of their own, creating measurements with notes of varied length.
  let writing = true
  let writes = 0
  let writeErrors = 0
  const writers = Array.from({ length: WRITERS }, async (_, index) => {
    const pair = await request(service.url, 'POST', '/api/auth/register', null, { email: `writer${index}@example.org`, password: 'bench password 1', name: `Writer ${index}` })
    const child = await request(service.url, 'POST', '/api/children', pair.accessToken, { name: `Kid ${index}`, dateOfBirth: '2020-01-01', sex: 'female' })
    while (writing) {
      const notes = 'n'.repeat(Math.floor(Math.random() * 400))
      try {
        await request(service.url, 'POST', `/api/children/${child.id}/measurements`, pair.accessToken, { measuredAt: '2024-01-01', weightKg: Number((20 + Math.random()).toFixed(3)), notes })
        writes += 1
      } catch (error) {
        if (writeErrors++ === 0) console.log(`a write failed: ${(error as Error).message}`)
      }
    }
  })
  await new Promise(resolve => setTimeout(resolve, 5000))

  const runs: Run[] = []
  const started = Date.now()
  for (let index = 0; index < RUNS; index++) {
    const run = await backupOnce(env, folder, async () => {
      const stuck = await watcher`select state, left(query, 60) as query from pg_stat_activity where backend_type = 'client backend' and state like 'idle in transaction%'`
      console.log(`  run ${index + 1}: watchdog after ${WATCHDOG_S} s; ${stuck.map(row => `${row.state as string} on "${row.query as string}"`).join('; ') || 'no connection idle in transaction'}`)
    })
    runs.push(run)
    console.log(`run ${index + 1}/${RUNS}: ${run.hung ? 'HUNG' : run.code === 0 ? 'ok' : `exit ${run.code}`} in ${(run.ms / 1000).toFixed(1)} s (${writes} writes so far)${run.code === 0 ? '' : `: ${run.tail}`}`)
  }
  const minutes = (Date.now() - started) / 60_000
  writing = false
  await Promise.all(writers)
  await watcher.end({ timeout: 5 })
  await service.stop()

  const left = readdirSync(folder).filter(name => !ARCHIVE.test(name))
  const ok = runs.filter(run => run.code === 0)
  console.log('')
  console.log(`runs:               ${runs.length} (${ok.length} succeeded)`)
  console.log(`backups per minute: ${(ok.length / minutes).toFixed(2)}`)
  console.log(`longest run:        ${(Math.max(...runs.map(run => run.ms)) / 1000).toFixed(1)} s`)
  console.log(`hung runs:          ${runs.filter(run => run.hung).length} (watchdog ${WATCHDOG_S} s)`)
  console.log(`failed runs:        ${runs.filter(run => !run.hung && run.code !== 0).length}`)
  console.log(`files left behind:  ${left.length}${left.length === 0 ? '' : ` (${left.join(', ')})`}`)
  console.log(`writes:             ${writes} (${writeErrors} failed)`)
}

runBenchmark(main)
