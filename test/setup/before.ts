import { spawn } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createSql } from '../../db/client'
import { migrate } from '../../db/migrate'
import { installQueue } from '../../db/queue'
import { findTestTables } from './growth'
import { STATE_FILE, withDatabase, type TestDbState } from './state'

/**
 * Starts one PostgreSQL for the whole run (the embedded one, unless
 * TEST_DATABASE_URL names another server) and migrates a template database
 * that every test file clones.
 */
async function startDaemon (): Promise<{ url: string; pid: number; dir: string }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'child-health-test-'))
  chmodSync(dir, 0o755)
  const readyFile = path.join(dir, 'ready.json')
  const log = openSync(path.join(dir, 'daemon.log'), 'a')
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'pg-daemon.ts'), path.join(dir, 'postgres'), readyFile], {
    detached: true,
    stdio: ['ignore', log, log]
  })
  child.unref()
  for (let waited = 0; waited < 60000; waited += 100) {
    if (existsSync(readyFile)) {
      const { url } = JSON.parse(readFileSync(readyFile, 'utf8'))
      return { url, pid: child.pid as number, dir }
    }
    if (child.exitCode !== null) break
    await new Promise(resolve => setTimeout(resolve, 100))
  }
  throw new Error(`the test database did not start; see ${path.join(dir, 'daemon.log')}`)
}

async function main (): Promise<void> {
  let growthDir: string
  try {
    growthDir = await findTestTables()
  } catch (error) {
    console.error((error as Error).message)
    process.exit(1)
  }
  const given = process.env.TEST_DATABASE_URL
  const daemon = given === undefined || given === '' ? await startDaemon() : null
  const serverUrl = daemon?.url ?? (given as string)
  const adminUrl = withDatabase(serverUrl, 'postgres')
  const template = `child_health_template_${process.pid}_${Date.now()}`

  const admin = createSql(adminUrl, { max: 1 })
  try {
    await admin.unsafe(`create database ${template}`)
  } finally {
    await admin.end()
  }
  const sql = createSql(withDatabase(serverUrl, template), { max: 1 })
  try {
    await migrate(sql)
  } finally {
    await sql.end()
  }
  // The job queue's schema too, so that no test app installs it again.
  await installQueue(withDatabase(serverUrl, template), () => {})

  const state: TestDbState = { adminUrl, template, daemonPid: daemon?.pid ?? null, dir: daemon?.dir ?? null, growthDir }
  mkdirSync(path.dirname(STATE_FILE), { recursive: true })
  writeFileSync(STATE_FILE, JSON.stringify(state, null, 2))
}

main().catch(error => {
  console.error(error)
  process.exit(1)
})
