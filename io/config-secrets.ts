import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { ConfigError } from '../lib/config-error'
import type { Env } from '../lib/config-readers'

// The JWT secrets of the configuration: the current pair, made and kept under
// DATA_DIR outside production, and the pair of before a rotation.

const MIN_SECRET = 32

/** Development secrets are made once and kept, so that restarts keep sessions valid. */
function developmentSecrets (dataDir: string): { jwtSecret: string; jwtRefreshSecret: string } {
  const file = path.join(dataDir, 'secrets.json')
  try {
    const stored = JSON.parse(readFileSync(file, 'utf8'))
    if (typeof stored.jwtSecret === 'string' && typeof stored.jwtRefreshSecret === 'string') return stored
  } catch {}
  const secrets = {
    jwtSecret: randomBytes(48).toString('base64url'),
    jwtRefreshSecret: randomBytes(48).toString('base64url')
  }
  mkdirSync(dataDir, { recursive: true })
  writeFileSync(file, JSON.stringify(secrets, null, 2) + '\n', { mode: 0o600 })
  return secrets
}

function secrets (env: Env, production: boolean, dataDir: string): { jwtSecret: string; jwtRefreshSecret: string } {
  let jwtSecret = env.JWT_SECRET ?? ''
  let jwtRefreshSecret = env.JWT_REFRESH_SECRET ?? ''
  if (!production && (jwtSecret === '' || jwtRefreshSecret === '')) {
    const stored = developmentSecrets(dataDir)
    jwtSecret ||= stored.jwtSecret
    jwtRefreshSecret ||= stored.jwtRefreshSecret
  }
  for (const [name, value] of [['JWT_SECRET', jwtSecret], ['JWT_REFRESH_SECRET', jwtRefreshSecret]]) {
    if (value === '') throw new ConfigError(name, 'is required in production')
    if ([...value].length < MIN_SECRET) throw new ConfigError(name, `must be at least ${MIN_SECRET} characters`)
  }
  if (jwtSecret === jwtRefreshSecret) throw new ConfigError('JWT_REFRESH_SECRET', 'must differ from JWT_SECRET')
  return { jwtSecret, jwtRefreshSecret }
}

/** The secrets of before a rotation, optional; each unlike every current one. */
function previousSecrets (env: Env, current: { jwtSecret: string, jwtRefreshSecret: string }): { jwtSecretPrevious: string | null, jwtRefreshSecretPrevious: string | null } {
  const found: Record<string, string | null> = {}
  for (const name of ['JWT_SECRET_PREVIOUS', 'JWT_REFRESH_SECRET_PREVIOUS']) {
    const value = env[name] ?? ''
    if (value === '') {
      found[name] = null
      continue
    }
    if ([...value].length < MIN_SECRET) throw new ConfigError(name, `must be at least ${MIN_SECRET} characters`)
    if (value === current.jwtSecret || value === current.jwtRefreshSecret) throw new ConfigError(name, 'must differ from JWT_SECRET and JWT_REFRESH_SECRET')
    found[name] = value
  }
  return { jwtSecretPrevious: found.JWT_SECRET_PREVIOUS, jwtRefreshSecretPrevious: found.JWT_REFRESH_SECRET_PREVIOUS }
}

/** The current secrets and those of before a rotation. */
export function jwt (env: Env, production: boolean, dataDir: string) {
  const current = secrets(env, production, dataDir)
  return { ...current, ...previousSecrets(env, current) }
}
