import { readFileSync } from 'node:fs'
import path from 'node:path'
import { loadConfig } from '../plugins/config'

/**
 * Reads the settings a unit gives the service (its Environment= lines, then
 * the example environment file, as systemd does) and checks that the service
 * accepts them once the secrets are filled in, and that everything it stores
 * lands in the unit's StateDirectory. Prints one line per unit; exits 1 on a
 * problem.
 */
const ROOT = path.join(__dirname, '..')
const EXAMPLE = path.join(ROOT, 'deploy', 'child-health.env.example')

function assignments (lines: string[]): Record<string, string> {
  const env: Record<string, string> = {}
  for (const line of lines) {
    const match = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim())
    if (match !== null) env[match[1]] = match[2]
  }
  return env
}

function check (unit: string): string {
  const text = readFileSync(path.join(ROOT, unit), 'utf8').split('\n')
  const fromUnit = assignments(text.filter(line => line.startsWith('Environment=')).map(line => line.slice('Environment='.length)))
  const fromFile = assignments(readFileSync(EXAMPLE, 'utf8').split('\n'))
  const state = text.find(line => line.startsWith('StateDirectory='))?.slice('StateDirectory='.length).split(/\s+/)[0]
  if (state === undefined) throw new Error(`${unit} has no StateDirectory=`)
  const config = loadConfig({ ...fromUnit, ...fromFile, JWT_SECRET: 'a'.repeat(48), JWT_REFRESH_SECRET: 'b'.repeat(48) })
  const home = `/var/lib/${state}/`
  for (const [name, dir] of [['UPLOAD_DIR', config.uploadDir], ['AVATAR_DIR', config.avatarDir], ['GROWTH_DATA_DIR', config.growthDataDir]]) {
    if (!dir.startsWith(home)) throw new Error(`${unit}: ${name} is ${dir}, outside its StateDirectory ${home}`)
  }
  if (!config.production) throw new Error(`${unit}: NODE_ENV is not production`)
  return `${unit} with ${path.relative(ROOT, EXAMPLE)}: the service accepts the settings; uploads, avatars and growth tables are under ${home}`
}

try {
  for (const unit of ['deploy/child-health.service', 'deploy/child-health-backup.service']) console.log(`ok: ${check(unit)}`)
} catch (error) {
  console.log(`FAILED: ${error instanceof Error ? error.message : String(error)}`)
  process.exit(1)
}
