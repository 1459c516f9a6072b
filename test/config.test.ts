import t from 'tap'
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { loadConfig } from '../io/config'
import { PRODUCTION, refused } from './config-helpers'
import { tempDir } from './temp-dir'

const A = 'a'.repeat(32)
const B = 'b'.repeat(32)

t.test('production defaults', async t => {
  const config = loadConfig(PRODUCTION)
  t.equal(config.production, true)
  t.equal(config.port, 3001)
  t.equal(config.host, '127.0.0.1')
  t.equal(config.logLevel, 'warn', 'warnings are logged, not only errors')
  t.equal(config.uploadDir, '/app/uploads')
  t.equal(config.avatarDir, '/app/avatars')
  t.equal(config.growthDataDir, '/app/growth')
  t.same(config.database, { kind: 'url', url: PRODUCTION.DATABASE_URL })
  t.equal(config.registration, 'invite')
  t.equal(config.trustProxy, false)
  t.same(config.corsOrigins, [])
  t.equal(config.maxFileSize, 10485760)
  t.equal(config.maxImportSize, 1073741824)
  t.equal(config.imageMaxPixels, 40_000_000)
  t.equal(config.accessTokenTtl, 900)
  t.equal(config.refreshTokenTtl, 604800)
  t.equal(config.authRateLimitMax, 10)
  t.equal(config.authRateLimitWindow, 60)
  t.equal(config.refreshReuseGrace, 10)
  t.equal(config.bcryptCost, 12)
  t.equal(config.exportConcurrency, 4)
  t.equal(config.downloadIdleTimeout, 60_000)
  t.equal(config.statementTimeout, 10_000)
  t.equal(config.keepAliveTimeout, 5_000)
})

t.test('production refuses a short secret', async t => {
  refused(t, { ...PRODUCTION, JWT_SECRET: 'x'.repeat(31) }, 'JWT_SECRET', /JWT_SECRET must be at least 32 characters/)
  refused(t, { ...PRODUCTION, JWT_REFRESH_SECRET: 'short' }, 'JWT_REFRESH_SECRET', /at least 32/)
})

t.test('production refuses equal secrets', async t => {
  refused(t, { ...PRODUCTION, JWT_REFRESH_SECRET: A }, 'JWT_REFRESH_SECRET', /must differ from JWT_SECRET/)
})

t.test('production refuses missing secrets', async t => {
  const { JWT_SECRET: _omitted, ...rest } = PRODUCTION
  refused(t, rest, 'JWT_SECRET', /JWT_SECRET is required in production/)
})

t.test('production refuses a missing database setting', async t => {
  const { DATABASE_URL: _omitted, ...rest } = PRODUCTION
  refused(t, rest, 'DATABASE_URL', /required in production/)
  refused(t, { ...rest, DB_HOST: 'db', DB_USER: 'app', DB_PASSWORD: 'pw' }, 'DB_NAME', /DB_NAME is required in production/)
  refused(t, { ...rest, DB_HOST: 'db', DB_NAME: 'app', DB_PASSWORD: 'pw' }, 'DB_USER', /DB_USER is required/)
})

t.test('DB_* variables build the connection URL; DATABASE_URL wins', async t => {
  const { DATABASE_URL: _omitted, ...rest } = PRODUCTION
  const config = loadConfig({ ...rest, DB_USER: 'app', DB_PASSWORD: 'p@ss w/rd', DB_NAME: 'health' })
  t.equal(config.database.kind, 'url')
  const url = new URL((config.database as { url: string }).url)
  t.equal(url.hostname, '127.0.0.1')
  t.equal(url.port, '5432')
  t.equal(decodeURIComponent(url.username), 'app')
  t.equal(decodeURIComponent(url.password), 'p@ss w/rd')
  t.equal(url.pathname, '/health')
  const both = loadConfig({ ...PRODUCTION, DB_HOST: 'elsewhere', DB_USER: 'x', DB_PASSWORD: 'y', DB_NAME: 'z' })
  t.same(both.database, { kind: 'url', url: PRODUCTION.DATABASE_URL })
})

t.test('bad values name their setting', async t => {
  refused(t, { ...PRODUCTION, PORT: 'eighty' }, 'PORT', /PORT must be a whole number/)
  refused(t, { ...PRODUCTION, PORT: '70000' }, 'PORT', /between 0 and 65535/)
  refused(t, { ...PRODUCTION, DATABASE_URL: 'mysql://x@y/z' }, 'DATABASE_URL', /postgres:\/\//)
  refused(t, { ...PRODUCTION, DATABASE_URL: 'not a url' }, 'DATABASE_URL', /must be a URL/)
  refused(t, { ...PRODUCTION, REGISTRATION: 'everyone' }, 'REGISTRATION', /invite, open, closed/)
  refused(t, { ...PRODUCTION, LOG_LEVEL: 'loud' }, 'LOG_LEVEL', /must be one of/)
  refused(t, { ...PRODUCTION, BCRYPT_COST: '9' }, 'BCRYPT_COST', /between 10 and 15/)
  refused(t, { ...PRODUCTION, BCRYPT_COST: '16' }, 'BCRYPT_COST', /between 10 and 15/)
  refused(t, { ...PRODUCTION, BCRYPT_COST: '4' }, 'BCRYPT_COST', /between 10 and 15/)
  t.equal(loadConfig({ ...PRODUCTION, NODE_ENV: 'test', BCRYPT_COST: '4' }).bcryptCost, 4, 'the tests may hash at cost 4')
  refused(t, { ...PRODUCTION, NODE_ENV: 'test', BCRYPT_COST: '3' }, 'BCRYPT_COST', /between 4 and 15/)
  refused(t, { ...PRODUCTION, MAX_FILE_SIZE: '-1' }, 'MAX_FILE_SIZE', /whole number/)
  refused(t, { ...PRODUCTION, MAX_IMPORT_SIZE: '1 GiB' }, 'MAX_IMPORT_SIZE', /whole number/)
  refused(t, { ...PRODUCTION, IMAGE_MAX_PIXELS: '0' }, 'IMAGE_MAX_PIXELS', /between 1 and 1000000000/)
  refused(t, { ...PRODUCTION, IMAGE_MAX_PIXELS: '40 MP' }, 'IMAGE_MAX_PIXELS', /whole number/)
  refused(t, { ...PRODUCTION, ACCESS_TOKEN_TTL: '0' }, 'ACCESS_TOKEN_TTL', /between 1/)
  refused(t, { ...PRODUCTION, REFRESH_TOKEN_TTL: '1.5' }, 'REFRESH_TOKEN_TTL', /whole number/)
  refused(t, { ...PRODUCTION, AUTH_RATE_LIMIT_MAX: 'many' }, 'AUTH_RATE_LIMIT_MAX', /whole number/)
  refused(t, { ...PRODUCTION, AUTH_RATE_LIMIT_WINDOW: '0' }, 'AUTH_RATE_LIMIT_WINDOW', /between 1/)
  refused(t, { ...PRODUCTION, EXPORT_CONCURRENCY: '0' }, 'EXPORT_CONCURRENCY', /between 1 and 1000/)
  refused(t, { ...PRODUCTION, DOWNLOAD_IDLE_TIMEOUT: 'a minute' }, 'DOWNLOAD_IDLE_TIMEOUT', /whole number/)
  refused(t, { ...PRODUCTION, DB_STATEMENT_TIMEOUT: '0' }, 'DB_STATEMENT_TIMEOUT', /between 1/)
  refused(t, { ...PRODUCTION, KEEP_ALIVE_TIMEOUT: '-5' }, 'KEEP_ALIVE_TIMEOUT', /whole number/)
  refused(t, { ...PRODUCTION, REFRESH_REUSE_GRACE: 'soon' }, 'REFRESH_REUSE_GRACE', /whole number/)
  refused(t, { ...PRODUCTION, CORS_ORIGIN: 'example.org' }, 'CORS_ORIGIN', /origins like/)
  refused(t, { ...PRODUCTION, CORS_ORIGIN: 'https://example.org/path' }, 'CORS_ORIGIN', /origins like/)
  refused(t, { ...PRODUCTION, TRUST_PROXY: 'some proxy' }, 'TRUST_PROXY', /TRUST_PROXY/)
  refused(t, { ...PRODUCTION, GROWTH_DATA_URL: 'ftp://mirror/who' }, 'GROWTH_DATA_URL', /http/)
})

t.test('every other setting is read', async t => {
  const config = loadConfig({
    ...PRODUCTION,
    PORT: '8080',
    HOST: '0.0.0.0',
    UPLOAD_DIR: '/srv/uploads',
    AVATAR_DIR: '/srv/avatars',
    GROWTH_DATA_DIR: '/srv/growth',
    GROWTH_DATA_URL: 'http://mirror.local/who',
    LOG_LEVEL: 'warn',
    REGISTRATION: 'open',
    TRUST_PROXY: '10.0.0.1, 192.168.0.0/16',
    CORS_ORIGIN: 'https://app.example.org, http://localhost:5173',
    MAX_FILE_SIZE: '1000',
    MAX_IMPORT_SIZE: '2000',
    ACCESS_TOKEN_TTL: '60',
    REFRESH_TOKEN_TTL: '3600',
    AUTH_RATE_LIMIT_MAX: '3',
    AUTH_RATE_LIMIT_WINDOW: '5',
    REFRESH_REUSE_GRACE: '0',
    BCRYPT_COST: '10'
  })
  t.equal(config.port, 8080)
  t.equal(config.host, '0.0.0.0')
  t.equal(config.uploadDir, '/srv/uploads')
  t.equal(config.avatarDir, '/srv/avatars')
  t.equal(config.growthDataDir, '/srv/growth')
  t.equal(config.growthDataUrl, 'http://mirror.local/who/')
  t.equal(config.logLevel, 'warn')
  t.equal(config.registration, 'open')
  t.same(config.trustProxy, ['10.0.0.1', '192.168.0.0/16'])
  t.same(config.corsOrigins, ['https://app.example.org', 'http://localhost:5173'])
  t.equal(config.maxFileSize, 1000)
  t.equal(config.maxImportSize, 2000)
  t.equal(config.accessTokenTtl, 60)
  t.equal(config.refreshTokenTtl, 3600)
  t.equal(config.authRateLimitMax, 3)
  t.equal(config.authRateLimitWindow, 5)
  t.equal(config.refreshReuseGrace, 0)
  t.equal(config.bcryptCost, 10)
  const fair = loadConfig({ ...PRODUCTION, EXPORT_CONCURRENCY: '9', DOWNLOAD_IDLE_TIMEOUT: '30', DB_STATEMENT_TIMEOUT: '3', KEEP_ALIVE_TIMEOUT: '75' })
  t.same([fair.exportConcurrency, fair.downloadIdleTimeout, fair.statementTimeout, fair.keepAliveTimeout], [9, 30_000, 3_000, 75_000], 'the fair-use settings, in seconds')
  t.equal(loadConfig({ ...PRODUCTION, IMAGE_MAX_PIXELS: '50000000' }).imageMaxPixels, 50_000_000)
  t.equal(loadConfig({ ...PRODUCTION, TRUST_PROXY: 'true' }).trustProxy, true)
  t.equal(loadConfig({ ...PRODUCTION, TRUST_PROXY: '2' }).trustProxy, 2)
})

t.test('UPLOAD_MIN_RATE and UPLOAD_RATE_WINDOW: how slow an archive import\'s upload may be', async t => {
  const defaults = loadConfig(PRODUCTION)
  t.same([defaults.uploadMinRate, defaults.uploadRateWindow], [10240, 10_000], '10 KiB a second over each 10 s by default')
  const set = loadConfig({ ...PRODUCTION, UPLOAD_MIN_RATE: '0', UPLOAD_RATE_WINDOW: '1' })
  t.same([set.uploadMinRate, set.uploadRateWindow], [0, 1_000], '0 turns the minimum off; the window is in seconds')
  refused(t, { ...PRODUCTION, UPLOAD_MIN_RATE: '-1' }, 'UPLOAD_MIN_RATE', /whole number/)
  refused(t, { ...PRODUCTION, UPLOAD_MIN_RATE: '10 KiB' }, 'UPLOAD_MIN_RATE', /whole number/)
  refused(t, { ...PRODUCTION, UPLOAD_RATE_WINDOW: '0' }, 'UPLOAD_RATE_WINDOW', /between 1 and 3600/)
  refused(t, { ...PRODUCTION, UPLOAD_RATE_WINDOW: '3601' }, 'UPLOAD_RATE_WINDOW', /between 1 and 3600/)
})

t.test('EVENT_KEEPALIVE: seconds between the comments of an event stream', async t => {
  t.equal(loadConfig(PRODUCTION).eventKeepAlive, 25_000, '25 s by default')
  t.equal(loadConfig({ ...PRODUCTION, EVENT_KEEPALIVE: '1' }).eventKeepAlive, 1_000)
  t.equal(loadConfig({ ...PRODUCTION, EVENT_KEEPALIVE: '3600' }).eventKeepAlive, 3_600_000)
  refused(t, { ...PRODUCTION, EVENT_KEEPALIVE: '0' }, 'EVENT_KEEPALIVE', /between 1 and 3600/)
  refused(t, { ...PRODUCTION, EVENT_KEEPALIVE: '3601' }, 'EVENT_KEEPALIVE', /between 1 and 3600/)
  refused(t, { ...PRODUCTION, EVENT_KEEPALIVE: 'often' }, 'EVENT_KEEPALIVE', /whole number/)
})

t.test('BATCH_ATOMIC_TIMEOUT_MS: how long the operations of a batch sharing one transaction may take', async t => {
  t.equal(loadConfig(PRODUCTION).batchAtomicTimeout, 10_000, '10 s by default, as DB_STATEMENT_TIMEOUT')
  t.equal(loadConfig({ ...PRODUCTION, BATCH_ATOMIC_TIMEOUT_MS: '250' }).batchAtomicTimeout, 250, 'in milliseconds')
  refused(t, { ...PRODUCTION, BATCH_ATOMIC_TIMEOUT_MS: '0' }, 'BATCH_ATOMIC_TIMEOUT_MS', /between 1 and 3600000/)
  refused(t, { ...PRODUCTION, BATCH_ATOMIC_TIMEOUT_MS: '3600001' }, 'BATCH_ATOMIC_TIMEOUT_MS', /between 1 and 3600000/)
  refused(t, { ...PRODUCTION, BATCH_ATOMIC_TIMEOUT_MS: '5s' }, 'BATCH_ATOMIC_TIMEOUT_MS', /whole number/)
})

t.test('outside production: embedded database and secrets kept under DATA_DIR', async t => {
  const dir = tempDir(t, 'child-health-config-')
  const first = loadConfig({ DATA_DIR: dir })
  t.equal(first.production, false)
  t.same(first.database, { kind: 'embedded', dir: path.join(dir, 'postgres') })
  t.equal(first.uploadDir, path.join(dir, 'uploads'))
  t.equal(first.avatarDir, path.join(dir, 'avatars'))
  t.equal(first.growthDataDir, path.join(dir, 'growth'))
  t.equal(first.logLevel, 'info')
  t.ok(first.jwtSecret.length >= 32)
  t.ok(first.jwtRefreshSecret.length >= 32)
  t.not(first.jwtSecret, first.jwtRefreshSecret)
  const file = path.join(dir, 'secrets.json')
  t.ok(existsSync(file))
  t.equal(statSync(file).mode & 0o777, 0o600, 'readable by its owner only')
  t.match(readFileSync(file, 'utf8'), first.jwtSecret)

  const second = loadConfig({ DATA_DIR: dir })
  t.equal(second.jwtSecret, first.jwtSecret, 'a restart keeps the access secret')
  t.equal(second.jwtRefreshSecret, first.jwtRefreshSecret, 'a restart keeps the refresh secret')

  const given = loadConfig({ DATA_DIR: dir, JWT_SECRET: A })
  t.equal(given.jwtSecret, A, 'a configured secret wins')
})

t.test('the settings of several instances and of the answer cache', async t => {
  const defaults = loadConfig(PRODUCTION)
  t.equal(defaults.redisUrl, null, 'without REDIS_URL the rate limits stay in memory')
  t.equal(defaults.jwtSecretPrevious, null)
  t.equal(defaults.jwtRefreshSecretPrevious, null)
  t.equal(defaults.responseCacheBytes, 32 * 1024 * 1024, 'the answer cache holds 32 MB by default')

  const set = loadConfig({ ...PRODUCTION, REDIS_URL: 'redis://cache.internal:6379/2', JWT_SECRET_PREVIOUS: 'c'.repeat(32), JWT_REFRESH_SECRET_PREVIOUS: 'd'.repeat(40), RESPONSE_CACHE_MB: '0' })
  t.equal(set.redisUrl, 'redis://cache.internal:6379/2')
  t.equal(set.jwtSecretPrevious, 'c'.repeat(32))
  t.equal(set.jwtRefreshSecretPrevious, 'd'.repeat(40))
  t.equal(set.responseCacheBytes, 0, '0 turns the cache off')

  refused(t, { ...PRODUCTION, REDIS_URL: 'http://cache:6379' }, 'REDIS_URL', /REDIS_URL must be a redis:\/\/ or rediss:\/\/ URL/)
  refused(t, { ...PRODUCTION, REDIS_URL: 'not a url' }, 'REDIS_URL', /redis:\/\//)
  refused(t, { ...PRODUCTION, JWT_SECRET_PREVIOUS: 'short' }, 'JWT_SECRET_PREVIOUS', /at least 32 characters/)
  refused(t, { ...PRODUCTION, JWT_SECRET_PREVIOUS: A }, 'JWT_SECRET_PREVIOUS', /must differ from JWT_SECRET and JWT_REFRESH_SECRET/)
  refused(t, { ...PRODUCTION, JWT_REFRESH_SECRET_PREVIOUS: B }, 'JWT_REFRESH_SECRET_PREVIOUS', /must differ/)
  refused(t, { ...PRODUCTION, RESPONSE_CACHE_MB: 'lots' }, 'RESPONSE_CACHE_MB', /RESPONSE_CACHE_MB must be a whole number/)
  refused(t, { ...PRODUCTION, RESPONSE_CACHE_MB: '-1' }, 'RESPONSE_CACHE_MB', /RESPONSE_CACHE_MB/)
})

t.test('REQUEST_TIMEOUT and HEADERS_TIMEOUT: seconds a request and its headers may take to arrive', async t => {
  const defaults = loadConfig(PRODUCTION)
  t.same([defaults.requestTimeout, defaults.headersTimeout], [60_000, 10_000], '60 s and 10 s by default')
  const set = loadConfig({ ...PRODUCTION, REQUEST_TIMEOUT: '30', HEADERS_TIMEOUT: '5' })
  t.same([set.requestTimeout, set.headersTimeout], [30_000, 5_000])
  const short = loadConfig({ ...PRODUCTION, REQUEST_TIMEOUT: '4' })
  t.same([short.requestTimeout, short.headersTimeout], [4_000, 4_000], 'the headers\' limit follows a shorter request limit')
  t.equal(loadConfig({ ...PRODUCTION, HEADERS_TIMEOUT: '60' }).headersTimeout, 60_000, 'the headers may take the whole request\'s time')
  refused(t, { ...PRODUCTION, REQUEST_TIMEOUT: '0' }, 'REQUEST_TIMEOUT', /between 1 and 3600/)
  refused(t, { ...PRODUCTION, REQUEST_TIMEOUT: 'a minute' }, 'REQUEST_TIMEOUT', /whole number/)
  refused(t, { ...PRODUCTION, HEADERS_TIMEOUT: '0' }, 'HEADERS_TIMEOUT', /between 1 and 3600/)
  refused(t, { ...PRODUCTION, REQUEST_TIMEOUT: '5', HEADERS_TIMEOUT: '10' }, 'HEADERS_TIMEOUT', /not be longer than REQUEST_TIMEOUT \(5\)/)
})

t.test('reminders: the worker on by default, e-mail set up by SMTP_URL and MAIL_FROM, retries and time limits', async t => {
  const config = loadConfig(PRODUCTION)
  t.same(config.reminders, { smtp: null, retryMs: 60_000, attempts: 6, sendTimeoutMs: 10_000 })
  t.equal(config.jobWorker, true, 'the job queue\'s worker runs by default')
  t.equal(config.webhookAllowPrivate, false)
  const set = loadConfig({
    ...PRODUCTION, REMINDERS: 'off', SMTP_URL: 'smtp://relay:secret@mail.home.arpa:587', MAIL_FROM: 'Child health <health@home.arpa>',
    REMINDER_RETRY_MS: '500', REMINDER_ATTEMPTS: '2', REMINDER_SEND_TIMEOUT: '3', WEBHOOK_ALLOW_PRIVATE: 'true'
  })
  t.equal(set.jobWorker, false, 'REMINDERS=off, the older name, still turns the worker off')
  t.same(set.reminders, {
    smtp: { url: 'smtp://relay:secret@mail.home.arpa:587', from: 'Child health <health@home.arpa>' }, retryMs: 500, attempts: 2, sendTimeoutMs: 3000
  })
  t.equal(set.webhookAllowPrivate, true)
  refused(t, { ...PRODUCTION, REMINDERS: 'maybe' }, 'REMINDERS', /one of on, off/)
  t.equal(loadConfig({ ...PRODUCTION, JOB_WORKER: 'off' }).jobWorker, false)
  t.equal(loadConfig({ ...PRODUCTION, JOB_WORKER: 'on', REMINDERS: 'off' }).jobWorker, true, 'JOB_WORKER wins over its older name')
  refused(t, { ...PRODUCTION, JOB_WORKER: 'no' }, 'JOB_WORKER', /one of on, off/)
  refused(t, { ...PRODUCTION, SMTP_URL: 'http://mail.example.org', MAIL_FROM: 'a@example.org' }, 'SMTP_URL', /smtp:\/\/ or smtps:\/\//)
  refused(t, { ...PRODUCTION, SMTP_URL: 'not a url', MAIL_FROM: 'a@example.org' }, 'SMTP_URL', /must be a URL/)
  refused(t, { ...PRODUCTION, SMTP_URL: 'smtp://mail.example.org' }, 'MAIL_FROM', /required with SMTP_URL/)
  refused(t, { ...PRODUCTION, SMTP_URL: 'smtp://mail.example.org', MAIL_FROM: 'nobody' }, 'MAIL_FROM', /an address/)
  refused(t, { ...PRODUCTION, MAIL_FROM: 'a@example.org' }, 'MAIL_FROM', /needs SMTP_URL/)
  refused(t, { ...PRODUCTION, REMINDER_RETRY_MS: '10' }, 'REMINDER_RETRY_MS', /between 100 and/)
  refused(t, { ...PRODUCTION, REMINDER_ATTEMPTS: '0' }, 'REMINDER_ATTEMPTS', /between 1 and 100/)
  refused(t, { ...PRODUCTION, WEBHOOK_ALLOW_PRIVATE: 'yes' }, 'WEBHOOK_ALLOW_PRIVATE', /one of true, false/)
})

t.test('PUBLIC_URL: the service\'s public address, read once, for share links and the VAPID subject', async t => {
  t.equal(loadConfig(PRODUCTION).publicUrl, null, 'unset by default')
  t.equal(loadConfig({ ...PRODUCTION, PUBLIC_URL: 'https://health.example.org/' }).publicUrl, 'https://health.example.org', 'without its trailing slash')
  t.equal(loadConfig({ ...PRODUCTION, PUBLIC_URL: 'http://192.168.1.5:8080/health//' }).publicUrl, 'http://192.168.1.5:8080/health', 'a path and a port are kept')
  refused(t, { ...PRODUCTION, PUBLIC_URL: 'health.example.org' }, 'PUBLIC_URL', /http or https URL/)
  refused(t, { ...PRODUCTION, PUBLIC_URL: 'ftp://health.example.org' }, 'PUBLIC_URL', /http or https URL/)
  refused(t, { ...PRODUCTION, PUBLIC_URL: 'https://health.example.org/?a=1' }, 'PUBLIC_URL', /without a query/)
  refused(t, { ...PRODUCTION, PUBLIC_URL: 'https://user:pw@health.example.org' }, 'PUBLIC_URL', /credentials/)
  refused(t, { ...PRODUCTION, PUBLIC_URL: `https://health.example.org/${'a'.repeat(60)}` }, 'PUBLIC_URL', /at most 76 characters/)
  t.equal(loadConfig({ ...PRODUCTION, PUBLIC_URL: 'https://health.example.org/app' }).vapid.subject, 'https://health.example.org', 'the VAPID subject is its origin')
})

t.test('webhooks: retries within 24 hours by default, each setting checked', async t => {
  t.same(loadConfig(PRODUCTION).webhooks, { retryMs: 5000, retryGrowth: 2, retryMaxMs: 3_600_000, giveUpMs: 86_400_000, timeoutMs: 10_000, jobBudgetMs: 5000, slowMs: 5000 })
  t.same(loadConfig({
    ...PRODUCTION, WEBHOOK_RETRY_MS: '200', WEBHOOK_RETRY_GROWTH: '1.5', WEBHOOK_RETRY_MAX_MS: '1000', WEBHOOK_GIVE_UP_MS: '60000', WEBHOOK_TIMEOUT: '3',
    WEBHOOK_JOB_BUDGET_MS: '2500', WEBHOOK_SLOW_MS: '1500'
  }).webhooks, { retryMs: 200, retryGrowth: 1.5, retryMaxMs: 1000, giveUpMs: 60_000, timeoutMs: 3000, jobBudgetMs: 2500, slowMs: 1500 })
  refused(t, { ...PRODUCTION, WEBHOOK_RETRY_MS: '50' }, 'WEBHOOK_RETRY_MS', /between 100 and/)
  refused(t, { ...PRODUCTION, WEBHOOK_RETRY_GROWTH: 'fast' }, 'WEBHOOK_RETRY_GROWTH', /a number like 2 or 1\.5/)
  refused(t, { ...PRODUCTION, WEBHOOK_RETRY_GROWTH: '0.5' }, 'WEBHOOK_RETRY_GROWTH', /between 1 and 10/)
  refused(t, { ...PRODUCTION, WEBHOOK_RETRY_MS: '5000', WEBHOOK_RETRY_MAX_MS: '1000' }, 'WEBHOOK_RETRY_MAX_MS', /not be shorter than WEBHOOK_RETRY_MS \(5000\)/)
  refused(t, { ...PRODUCTION, WEBHOOK_GIVE_UP_MS: '10' }, 'WEBHOOK_GIVE_UP_MS', /between 1000 and/)
  refused(t, { ...PRODUCTION, WEBHOOK_TIMEOUT: '0' }, 'WEBHOOK_TIMEOUT', /between 1 and 120/)
  refused(t, { ...PRODUCTION, WEBHOOK_JOB_BUDGET_MS: '50' }, 'WEBHOOK_JOB_BUDGET_MS', /between 100 and 600000/)
  refused(t, { ...PRODUCTION, WEBHOOK_JOB_BUDGET_MS: '5s' }, 'WEBHOOK_JOB_BUDGET_MS', /a whole number/)
  refused(t, { ...PRODUCTION, WEBHOOK_SLOW_MS: '99' }, 'WEBHOOK_SLOW_MS', /between 100 and 120000/)
})

t.test('PUBLIC_URL is read once; sign-in with an identity provider needs all of its settings', async t => {
  t.equal(loadConfig(PRODUCTION).publicUrl, null)
  t.equal(loadConfig(PRODUCTION).oidc, null, 'no provider by default')
  t.equal(loadConfig({ ...PRODUCTION, PUBLIC_URL: 'https://health.example.org/' }).publicUrl, 'https://health.example.org', 'without its trailing slash')
  refused(t, { ...PRODUCTION, PUBLIC_URL: 'health.example.org' }, 'PUBLIC_URL', /http or https URL/)
  refused(t, { ...PRODUCTION, PUBLIC_URL: 'ftp://health.example.org' }, 'PUBLIC_URL', /http or https URL/)
  refused(t, { ...PRODUCTION, PUBLIC_URL: 'https://health.example.org/?a=1' }, 'PUBLIC_URL', /without a query/)

  const full = { ...PRODUCTION, PUBLIC_URL: 'https://health.example.org', OIDC_ISSUER: 'https://id.example.org', OIDC_CLIENT_ID: 'health', OIDC_CLIENT_SECRET: ' s3cret ' }
  t.same(loadConfig(full).oidc, {
    issuer: 'https://id.example.org', clientId: 'health', clientSecret: ' s3cret ', scopes: 'openid email profile', name: 'id.example.org', ca: null, only: false
  }, 'the defaults; a secret is never trimmed')
  t.match(loadConfig({ ...full, OIDC_SCOPES: 'openid  email groups', OIDC_NAME: 'Pocket ID', OIDC_ONLY: 'true' }).oidc, { scopes: 'openid email groups', name: 'Pocket ID', only: true })
  refused(t, { ...full, OIDC_CLIENT_SECRET: '' }, 'OIDC_CLIENT_SECRET', /must be set with OIDC_ISSUER and OIDC_CLIENT_ID/)
  refused(t, { ...PRODUCTION, OIDC_CLIENT_ID: 'health' }, 'OIDC_ISSUER', /must be set with OIDC_CLIENT_ID/)
  refused(t, { ...full, PUBLIC_URL: '' }, 'PUBLIC_URL', /required with OIDC_ISSUER/)
  refused(t, { ...full, OIDC_ISSUER: 'http://id.example.org' }, 'OIDC_ISSUER', /https:/)
  refused(t, { ...full, OIDC_ISSUER: 'id.example.org' }, 'OIDC_ISSUER', /must be a URL/)
  refused(t, { ...full, OIDC_SCOPES: 'email profile' }, 'OIDC_SCOPES', /must include openid/)
  refused(t, { ...full, OIDC_SCOPES: 'openid "email"' }, 'OIDC_SCOPES', /separated by spaces/)
  refused(t, { ...full, OIDC_ONLY: 'yes' }, 'OIDC_ONLY', /true, false/)
  refused(t, { ...PRODUCTION, OIDC_ONLY: 'true' }, 'OIDC_ONLY', /needs OIDC_ISSUER/)
  const dir = tempDir(t, 'child-health-config-')
  refused(t, { ...full, OIDC_CA_FILE: path.join(dir, 'missing.pem') }, 'OIDC_CA_FILE', /cannot be read/)
  writeFileSync(path.join(dir, 'not.pem'), 'hello')
  refused(t, { ...full, OIDC_CA_FILE: path.join(dir, 'not.pem') }, 'OIDC_CA_FILE', /no PEM certificate/)
})
