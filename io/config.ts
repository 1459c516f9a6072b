import path from 'node:path'
import { version } from '../package.json'
import { ConfigError } from '../lib/config-error'
import { flag, integer, oneOf, text, type Env } from '../lib/config-readers'
import { jwt } from './config-secrets'
import { oidcSettings, type OidcConfig } from './oidc-config'
import { vapidSettings, type VapidSettings } from './vapid'
import { remindersConfig, type RemindersConfig } from '../lib/reminders/config'
import { webhooksConfig, type WebhooksConfig } from '../lib/webhooks/config'

export type Registration = 'invite' | 'open' | 'closed'

export type DatabaseConfig =
  | { kind: 'url'; url: string }
  | { kind: 'embedded'; dir: string }

export interface Config {
  production: boolean
  version: string
  port: number
  host: string
  database: DatabaseConfig
  dataDir: string
  uploadDir: string
  avatarDir: string
  growthDataDir: string
  growthDataUrl: string | null
  jwtSecret: string
  jwtRefreshSecret: string
  /** Secrets of before a rotation: tokens they signed are still accepted, none is signed with them. */
  jwtSecretPrevious: string | null
  jwtRefreshSecretPrevious: string | null
  /** The Redis that keeps the rate-limit counters of every instance; null keeps them in memory. */
  redisUrl: string | null
  /** The bound of the in-process cache of answers, in bytes. */
  responseCacheBytes: number
  logLevel: string
  registration: Registration
  trustProxy: boolean | number | string[]
  corsOrigins: string[]
  maxFileSize: number
  maxImportSize: number
  /** The most pixels an image's frame may have to be decoded; larger ones are refused from their header. */
  imageMaxPixels: number
  accessTokenTtl: number
  refreshTokenTtl: number
  authRateLimitMax: number
  authRateLimitWindow: number
  refreshReuseGrace: number
  bcryptCost: number
  /** Exports being read from the database at once, in all (each user may have two); their downloads take none. */
  exportConcurrency: number
  /** A download whose client takes none of the bytes waiting for it for this long is ended, in milliseconds. */
  downloadIdleTimeout: number
  /** Bytes a second an archive import's upload must bring over each window; 0 for no minimum. */
  uploadMinRate: number
  /** The window over which that rate is measured, the first one a grace, in milliseconds. */
  uploadRateWindow: number
  /** PostgreSQL's statement_timeout on every connection, in milliseconds. */
  statementTimeout: number
  /** How long one step of a backup (one read of the database, one table, one file) may take, in milliseconds. */
  backupStepTimeout: number
  /** How long a whole backup may take, in milliseconds. */
  backupTimeout: number
  /** How long the operations of a batch that share one transaction (an atomic batch, or one with an Idempotency-Key) may take, in milliseconds. */
  batchAtomicTimeout: number
  /** How long an idle keep-alive connection stays open, in milliseconds. */
  keepAliveTimeout: number
  /** How long a whole request (headers and body) may take to arrive, in milliseconds. */
  requestTimeout: number
  /** How long a request's headers may take to arrive, in milliseconds; never more than the request's. */
  headersTimeout: number
  /** How often an open event stream gets a comment that keeps proxies from closing it, in milliseconds. */
  eventKeepAlive: number
  /**
   * The service's public address, where the front end is served and /api
   * reaches the API (`https://health.example.org`, no trailing slash); null
   * when unset. Share links are made from it.
   */
  publicUrl: string | null
  /** Web Push's VAPID keys as configured (null when unset) and the contact they name; see vapidKeys in io/vapid.ts. */
  vapid: VapidSettings
  /** Sign-in with the home's identity provider; null when not configured. */
  oidc: OidcConfig | null
  /** Outgoing messages (ntfy topics, webhooks) may go to loopback, link-local and the service's own addresses. */
  webhookAllowPrivate: boolean
  /** Whether this instance runs the job queue's worker (reminders and webhooks); JOB_WORKER=off, or its older name REMINDERS=off, turns it off. */
  jobWorker: boolean
  reminders: RemindersConfig
  webhooks: WebhooksConfig
}

export { ConfigError }

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

function databaseConfig (env: Env, production: boolean, dataDir: string): DatabaseConfig {
  const url = text(env, 'DATABASE_URL')
  if (url !== undefined) {
    let parsed: URL
    try {
      parsed = new URL(url)
    } catch {
      throw new ConfigError('DATABASE_URL', 'must be a URL like postgres://user:password@host:5432/name')
    }
    if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
      throw new ConfigError('DATABASE_URL', 'must start with postgres:// or postgresql://')
    }
    return { kind: 'url', url }
  }
  const names = ['DB_HOST', 'DB_PORT', 'DB_USER', 'DB_PASSWORD', 'DB_NAME']
  if (names.some(name => text(env, name) !== undefined)) {
    const host = text(env, 'DB_HOST') ?? '127.0.0.1'
    const port = integer(env, 'DB_PORT', 5432, 1, 65535)
    const user = text(env, 'DB_USER')
    const password = env.DB_PASSWORD ?? ''
    const name = text(env, 'DB_NAME')
    if (production) {
      for (const required of ['DB_USER', 'DB_PASSWORD', 'DB_NAME']) {
        if (text(env, required) === undefined) throw new ConfigError(required, 'is required in production')
      }
    }
    const target = new URL('postgres://placeholder')
    target.hostname = host
    target.port = String(port)
    target.username = encodeURIComponent(user ?? 'postgres')
    target.password = encodeURIComponent(password)
    target.pathname = '/' + encodeURIComponent(name ?? user ?? 'postgres')
    return { kind: 'url', url: target.toString() }
  }
  if (production) throw new ConfigError('DATABASE_URL', 'or DB_HOST, DB_USER, DB_PASSWORD and DB_NAME are required in production')
  return { kind: 'embedded', dir: path.join(dataDir, 'postgres') }
}

function trustProxy (env: Env): Config['trustProxy'] {
  const raw = text(env, 'TRUST_PROXY')
  if (raw === undefined || raw === 'false') return false
  if (raw === 'true') return true
  if (/^\d+$/.test(raw)) return Number(raw)
  const addresses = raw.split(',').map(item => item.trim()).filter(Boolean)
  for (const address of addresses) {
    if (!/^[0-9a-fA-F.:]+(\/\d{1,3})?$/.test(address) && !['loopback', 'linklocal', 'uniquelocal'].includes(address)) {
      throw new ConfigError('TRUST_PROXY', `must be true, false, a hop count or addresses, got "${address}"`)
    }
  }
  return addresses
}

function corsOrigins (env: Env): string[] {
  const raw = text(env, 'CORS_ORIGIN')
  if (raw === undefined) return []
  return raw.split(',').map(item => item.trim()).filter(Boolean).map(origin => {
    let parsed: URL
    try {
      parsed = new URL(origin)
    } catch {
      throw new ConfigError('CORS_ORIGIN', `must list origins like https://example.org, got "${origin}"`)
    }
    if ((parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.origin !== origin.replace(/\/$/, '')) {
      throw new ConfigError('CORS_ORIGIN', `must list origins like https://example.org, got "${origin}"`)
    }
    return parsed.origin
  })
}

/**
 * A SMART Health Link's manifest URL is at most 128 characters: PUBLIC_URL,
 * then /api/shl/ and a token of 43.
 */
export const PUBLIC_URL_MAX = 128 - '/api/shl/'.length - 43

function publicUrl (env: Env): string | null {
  const raw = text(env, 'PUBLIC_URL')
  if (raw === undefined) return null
  let parsed: URL
  try {
    parsed = new URL(raw)
  } catch {
    throw new ConfigError('PUBLIC_URL', `must be an http or https URL like https://health.example.org, got "${raw}"`)
  }
  if ((parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.search !== '' || parsed.hash !== '' || parsed.username !== '' || parsed.password !== '') {
    throw new ConfigError('PUBLIC_URL', `must be an http or https URL like https://health.example.org, without a query, a fragment or credentials, got "${raw}"`)
  }
  const url = parsed.href.replace(/\/+$/, '')
  if (url.length > PUBLIC_URL_MAX) throw new ConfigError('PUBLIC_URL', `must be at most ${PUBLIC_URL_MAX} characters, so that a share link's manifest URL keeps within 128, got ${url.length}`)
  return url
}

/** An optional URL of one of the given protocols, as written; `kind` names them in the error. */
function optionalUrl (env: Env, name: string, protocols: string[], kind: string): string | null {
  const raw = text(env, name)
  if (raw === undefined) return null
  let protocol: string | undefined
  try {
    protocol = new URL(raw).protocol
  } catch {}
  if (protocol === undefined || !protocols.includes(protocol)) throw new ConfigError(name, `must be ${kind} URL, got "${raw}"`)
  return raw
}

function growthDataUrl (env: Env): string | null {
  const raw = optionalUrl(env, 'GROWTH_DATA_URL', ['http:', 'https:'], 'an http or https')
  if (raw === null) return null
  return raw.endsWith('/') ? raw : raw + '/'
}

/** The time a whole request may take, and the time its headers may take: never more than the whole. */
function requestTimeouts (env: Env): { requestTimeout: number, headersTimeout: number } {
  const request = integer(env, 'REQUEST_TIMEOUT', 60, 1, 3600)
  const headers = integer(env, 'HEADERS_TIMEOUT', Math.min(10, request), 1, 3600)
  if (headers > request) throw new ConfigError('HEADERS_TIMEOUT', `must not be longer than REQUEST_TIMEOUT (${request}), got ${headers}`)
  return { requestTimeout: request * 1000, headersTimeout: headers * 1000 }
}

/** Reads and checks every setting once. Throws ConfigError naming the first bad one. */
export function loadConfig (env: Env = process.env): Config {
  const production = env.NODE_ENV === 'production'
  const dataDir = path.resolve(text(env, 'DATA_DIR') ?? './data')
  const logLevel = oneOf(env, 'LOG_LEVEL', LOG_LEVELS, production ? 'warn' : 'info')
  const host = text(env, 'HOST') ?? '127.0.0.1'
  const publicAddress = publicUrl(env)
  return {
    production,
    version,
    port: integer(env, 'PORT', 3001, 0, 65535),
    host,
    database: databaseConfig(env, production, dataDir),
    dataDir,
    uploadDir: path.resolve(text(env, 'UPLOAD_DIR') ?? (production ? '/app/uploads' : path.join(dataDir, 'uploads'))),
    avatarDir: path.resolve(text(env, 'AVATAR_DIR') ?? (production ? '/app/avatars' : path.join(dataDir, 'avatars'))),
    growthDataDir: path.resolve(text(env, 'GROWTH_DATA_DIR') ?? (production ? '/app/growth' : path.join(dataDir, 'growth'))),
    growthDataUrl: growthDataUrl(env),
    ...jwt(env, production, dataDir),
    redisUrl: optionalUrl(env, 'REDIS_URL', ['redis:', 'rediss:'], 'a redis:// or rediss://'),
    responseCacheBytes: integer(env, 'RESPONSE_CACHE_MB', 32, 0, 65536) * 1024 * 1024,
    logLevel,
    registration: oneOf(env, 'REGISTRATION', ['invite', 'open', 'closed'] as const, 'invite'),
    trustProxy: trustProxy(env),
    corsOrigins: corsOrigins(env),
    maxFileSize: integer(env, 'MAX_FILE_SIZE', 10485760, 1, Number.MAX_SAFE_INTEGER),
    maxImportSize: integer(env, 'MAX_IMPORT_SIZE', 1073741824, 1, Number.MAX_SAFE_INTEGER),
    imageMaxPixels: integer(env, 'IMAGE_MAX_PIXELS', 40_000_000, 1, 1_000_000_000),
    accessTokenTtl: integer(env, 'ACCESS_TOKEN_TTL', 900, 1, 31536000),
    refreshTokenTtl: integer(env, 'REFRESH_TOKEN_TTL', 604800, 1, 31536000),
    authRateLimitMax: integer(env, 'AUTH_RATE_LIMIT_MAX', 10, 1, 1000000),
    authRateLimitWindow: integer(env, 'AUTH_RATE_LIMIT_WINDOW', 60, 1, 86400),
    refreshReuseGrace: integer(env, 'REFRESH_REUSE_GRACE', 10, 0, 86400),
    // Below 10 only for the tests, whose thousands of logins would otherwise be most of their time.
    bcryptCost: integer(env, 'BCRYPT_COST', 12, env.NODE_ENV === 'test' ? 4 : 10, 15),
    exportConcurrency: integer(env, 'EXPORT_CONCURRENCY', 4, 1, 1000),
    downloadIdleTimeout: integer(env, 'DOWNLOAD_IDLE_TIMEOUT', 60, 1, 3600) * 1000,
    uploadMinRate: integer(env, 'UPLOAD_MIN_RATE', 10240, 0, Number.MAX_SAFE_INTEGER),
    uploadRateWindow: integer(env, 'UPLOAD_RATE_WINDOW', 10, 1, 3600) * 1000,
    statementTimeout: integer(env, 'DB_STATEMENT_TIMEOUT', 10, 1, 86400) * 1000,
    batchAtomicTimeout: integer(env, 'BATCH_ATOMIC_TIMEOUT_MS', 10_000, 1, 3_600_000),
    backupStepTimeout: integer(env, 'BACKUP_STEP_TIMEOUT_MS', 600_000, 1, 86_400_000),
    backupTimeout: integer(env, 'BACKUP_TIMEOUT_MS', 3_600_000, 1, 86_400_000),
    keepAliveTimeout: integer(env, 'KEEP_ALIVE_TIMEOUT', 5, 1, 3600) * 1000,
    ...requestTimeouts(env),
    eventKeepAlive: integer(env, 'EVENT_KEEPALIVE', 25, 1, 3600) * 1000,
    publicUrl: publicAddress,
    vapid: vapidSettings(env, publicAddress),
    oidc: oidcSettings(env, publicAddress),
    webhookAllowPrivate: flag(env, 'WEBHOOK_ALLOW_PRIVATE', false),
    // REMINDERS is the setting's older name, read when JOB_WORKER is unset.
    jobWorker: oneOf(env, 'JOB_WORKER', ['on', 'off'], oneOf(env, 'REMINDERS', ['on', 'off'], 'on')) === 'on',
    reminders: remindersConfig(env),
    webhooks: webhooksConfig(env)
  }
}
