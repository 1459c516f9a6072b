import { readFileSync } from 'node:fs'
import path from 'node:path'
import type postgres from 'postgres'
import type { Config } from '../../io/config'
import { createSql, type Sql } from '../client'
import { startEmbeddedDatabase, type Logger } from '../embedded'

export interface Database {
  sql: Sql
  close: () => Promise<void>
}

/** The database name lib/embedded-db.ts creates in its cluster. */
const EMBEDDED_DATABASE = 'childhealth'
const READY_WAIT_MS = 30_000

function alive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** postmaster.pid: pid, data directory, start time, port, socket directory, address, shared memory key, status. */
function postmaster (dir: string): { pid: number, port: number, ready: boolean } | null {
  try {
    const lines = readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n')
    const pid = Number(lines[0])
    if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return null
    return { pid, port: Number(lines[3]), ready: lines[7]?.trim() === 'ready' }
  } catch {
    return null
  }
}

async function runningUrl (dir: string): Promise<string | null> {
  for (let waited = 0; ; waited += 200) {
    const found = postmaster(dir)
    if (found === null) return null
    if (found.ready) {
      const { password } = JSON.parse(readFileSync(`${dir}.json`, 'utf8'))
      return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${found.port}/${EMBEDDED_DATABASE}`
    }
    if (waited >= READY_WAIT_MS) throw new Error(`DATA_DIR: the embedded database in ${dir} did not become ready`)
    await new Promise(resolve => setTimeout(resolve, 200))
  }
}

/**
 * The configured database for a command run beside the service. An embedded
 * PostgreSQL can run only once per DATA_DIR: when the service already runs it,
 * the command connects to it (its port is in postmaster.pid, its password in
 * postgres.json) and leaves it running; otherwise the command starts it and
 * stops it when done. `options` go to postgres.js.
 */
export async function openDatabase (config: Config, log: Logger, options: postgres.Options<{}> = {}): Promise<Database> {
  if (config.database.kind === 'url') {
    const sql = createSql(config.database.url, { max: 2, ...options })
    return { sql, close: () => sql.end({ timeout: 5 }) }
  }
  const dir = config.database.dir
  const url = await runningUrl(dir)
  if (url !== null) {
    log.debug(`using the embedded database already running in ${dir}`)
    const sql = createSql(url, { max: 2, ...options })
    return { sql, close: () => sql.end({ timeout: 5 }) }
  }
  const embedded = await startEmbeddedDatabase(dir, log)
  const sql = createSql(embedded.url, { max: 2, ...options })
  return {
    sql,
    close: async () => {
      await sql.end({ timeout: 5 })
      await embedded.stop()
    }
  }
}
