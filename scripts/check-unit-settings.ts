import { readFileSync } from 'node:fs'
import path from 'node:path'
import { loadConfig } from '../io/config'

/**
 * Reads the settings a unit gives the service (its Environment= lines, then
 * the example environment file, as systemd does) and checks that the service
 * accepts them once the secrets are filled in, and that everything it stores
 * lands in the unit's StateDirectory; that the backup unit's TimeoutStartSec=
 * is above the backup's own bound. Prints one line per unit; exits 1 on a
 * problem.
 */
const ROOT = path.join(__dirname, '..')
/** Each unit, the example of the environment file it reads, and the port its instance name gives it. */
const UNITS = [
  { unit: 'deploy/child-health.service', example: 'deploy/child-health.env.example' },
  { unit: 'deploy/child-health-backup.service', example: 'deploy/child-health.env.example' },
  { unit: 'deploy/child-health@.service', example: 'deploy/child-health-instances.env.example', instance: '3002' }
]

function assignments (lines: string[]): Record<string, string> {
  const env: Record<string, string> = {}
  for (const line of lines) {
    const match = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim())
    if (match !== null) env[match[1]] = match[2]
  }
  return env
}

/** A systemd time span as TimeoutStartSec= takes it (`2h`, `90min`, `30s`, `3600`), in seconds; null for one it cannot read, `infinity` included. */
function seconds (span: string): number | null {
  const units: Record<string, number> = { '': 1, s: 1, sec: 1, m: 60, min: 60, h: 3600, hr: 3600 }
  let total = 0
  for (const part of span.trim().split(/\s+/)) {
    const match = /^(\d+)([a-z]*)$/.exec(part)
    if (match === null || units[match[2]] === undefined) return null
    total += Number(match[1]) * units[match[2]]
  }
  return total
}

function check ({ unit, example, instance }: { unit: string, example: string, instance?: string }): string {
  const text = readFileSync(path.join(ROOT, unit), 'utf8').replaceAll('%i', instance ?? '%i').split('\n')
  const fromUnit = assignments(text.filter(line => line.startsWith('Environment=')).map(line => line.slice('Environment='.length)))
  const fromFile = assignments(readFileSync(path.join(ROOT, example), 'utf8').split('\n'))
  const state = text.find(line => line.startsWith('StateDirectory='))?.slice('StateDirectory='.length).split(/\s+/)[0]
  if (state === undefined) throw new Error(`${unit} has no StateDirectory=`)
  // The environment file wins over Environment= lines, as in systemd.
  const config = loadConfig({ ...fromUnit, ...fromFile, JWT_SECRET: 'a'.repeat(48), JWT_REFRESH_SECRET: 'b'.repeat(48) })
  const writable = text.filter(line => line.startsWith('ReadWritePaths=')).flatMap(line => line.slice('ReadWritePaths='.length).split(/\s+/))
  const homes = [`/var/lib/${state}/`, ...writable.map(dir => `${dir.replace(/\/$/, '')}/`)]
  for (const [name, dir] of [['UPLOAD_DIR', config.uploadDir], ['AVATAR_DIR', config.avatarDir], ['GROWTH_DATA_DIR', config.growthDataDir]]) {
    if (!homes.some(home => dir.startsWith(home))) throw new Error(`${unit}: ${name} is ${dir}, outside ${homes.join(' and ')}`)
  }
  if (!config.production) throw new Error(`${unit}: NODE_ENV is not production`)
  if (unit.endsWith('-backup.service')) {
    const start = text.find(line => line.startsWith('TimeoutStartSec='))?.slice('TimeoutStartSec='.length)
    const limit = start === undefined ? null : seconds(start)
    if (limit === null || limit <= config.backupTimeout / 1000) {
      throw new Error(`${unit}: TimeoutStartSec= must be set above the backup's own bound (BACKUP_TIMEOUT_MS, ${config.backupTimeout / 1000} s), got ${start ?? 'none'}`)
    }
  }
  if (instance !== undefined && config.port !== Number(instance)) {
    throw new Error(`${unit}: the instance ${instance} listens on ${config.port}; ${example} must leave PORT to the unit`)
  }
  return `${unit} with ${example}: the service accepts the settings; uploads, avatars and growth tables are under ${homes.join(' or ')}` +
    (instance === undefined ? '' : `; instance ${instance} listens on port ${instance}`)
}

try {
  for (const unit of UNITS) console.log(`ok: ${check(unit)}`)
} catch (error) {
  console.log(`FAILED: ${error instanceof Error ? error.message : String(error)}`)
  process.exit(1)
}
