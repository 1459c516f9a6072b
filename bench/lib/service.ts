import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync } from 'node:fs'
import path from 'node:path'
import { settings } from './settings'
import { startProcess, stopProcess, waitForHttp } from './processes'
import { freePort } from '../../db/embedded'

// The build's own plain script, which has no types.
export const { unitFlags } = require('../../scripts/unit-flags') as { unitFlags: (unit?: string) => string[] }

export const ROOT = path.join(__dirname, '..', '..')
const SHARED_GROWTH = path.join(ROOT, '..', 'shared', 'growth')

export interface Service {
  url: string
  growthTables: boolean
  /** The service's UPLOAD_DIR, where attachment files are stored. */
  uploadDir: string
  /** The process's id, for its memory in /proc. */
  pid: number
  /** Milliseconds from the spawn to the first 200 of `/api/health`, to within `pollMs`. */
  startMs: number
  /** Stops it before the run ends. */
  stop: () => Promise<void>
}

/** The V8 flags the systemd unit starts the service with (its ExecStart= line), so that the bench measures the service as deployed. */
export function productionFlags (): string[] {
  const given = process.env.BENCH_NODE_FLAGS
  if (given !== undefined) return given.split(/\s+/).filter(word => word !== '')
  return unitFlags()
}

/** Only what the child needs: nothing of the caller's configuration leaks into the service. */
export function baseEnv (): Record<string, string> {
  const env: Record<string, string> = {}
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'LANG', 'TZ']) {
    const value = process.env[name]
    if (value !== undefined) env[name] = value
  }
  return env
}

/**
 * The built service (`dist/server.js`) in production mode against the run's
 * database. BENCH_FROM_SOURCE=1 runs server.ts through tsx instead, for when
 * the build is broken. A second service of the run takes a `name` of its own
 * (its folder) and settings of its own in `env`; `pollMs` is how often its
 * health is asked while it starts.
 */
export async function startService (databaseUrl: string, dir: string, options: { name?: string, env?: Record<string, string>, pollMs?: number } = {}): Promise<Service> {
  const name = options.name ?? 'service'
  const port = await freePort()
  const growthTables = existsSync(SHARED_GROWTH)
  const dataDir = path.join(dir, name)
  const uploadDir = path.join(dataDir, 'uploads')
  for (const sub of ['uploads', 'avatars', 'growth']) mkdirSync(path.join(dataDir, sub), { recursive: true })
  const env = {
    ...baseEnv(),
    NODE_ENV: 'production',
    LOG_LEVEL: 'error',
    HOST: '127.0.0.1',
    PORT: String(port),
    DATABASE_URL: databaseUrl,
    DATA_DIR: dataDir,
    UPLOAD_DIR: uploadDir,
    AVATAR_DIR: path.join(dataDir, 'avatars'),
    JWT_SECRET: randomBytes(48).toString('base64url'),
    JWT_REFRESH_SECRET: randomBytes(48).toString('base64url'),
    AUTH_RATE_LIMIT_MAX: '1000000',
    BCRYPT_COST: String(settings.bcryptCost),
    REGISTRATION: 'open',
    ACCESS_TOKEN_TTL: '3600',
    // Without the WHO tables beside the project, a download would be tried:
    // it is pointed at a closed local port so the run stays on loopback.
    GROWTH_DATA_DIR: growthTables ? SHARED_GROWTH : path.join(dataDir, 'growth'),
    ...(growthTables ? {} : { GROWTH_DATA_URL: 'http://127.0.0.1:9/' }),
    ...options.env
  }
  const args = process.env.BENCH_FROM_SOURCE === '1' ? ['--import', 'tsx', 'server.ts'] : [...productionFlags(), 'dist/server.js']
  const spawnedAt = performance.now()
  const service = startProcess(name === 'service' ? 'the service' : `the ${name}`, args, env, ROOT)
  const url = `http://127.0.0.1:${port}`
  await waitForHttp(service, `${url}/api/health`, 60_000, options.pollMs)
  const startMs = Math.round(performance.now() - spawnedAt)
  return { url, growthTables, uploadDir, pid: service.child.pid as number, startMs, stop: () => stopProcess(service) }
}
