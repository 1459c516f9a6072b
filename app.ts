import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync, type FastifyPluginCallback, type FastifyRequest, type RawServerDefault } from 'fastify'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { randomUUID } from 'node:crypto'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import configPlugin from './plugins/config'
import type { Config } from './io/config'
import { logDestination } from './io/log-destination'
import errors, { JSON_BODY_LIMIT } from './plugins/errors'
import { clientErrorHandler, frameworkErrors } from './plugins/client-errors'
import { withoutStoredNames } from './lib/files/names'
import { lazyChildLogger } from './lib/lazy-logger'
import validation from './plugins/validation'
import { validatorFactory } from './lib/validation'
import { serializerFactory } from './lib/serialization'
import type { Precompiled } from './lib/compiled-schemas'
import { loadPrecompiled } from './io/precompiled'
import security from './plugins/security'
import db, { type DbOptions } from './plugins/db'
import handover from './plugins/handover'
import responseCache from './plugins/response-cache'
import conditionalReads from './plugins/conditional-reads'
import openapi from './plugins/openapi'
import growth from './plugins/growth'
import tokens from './plugins/tokens'
import passwords from './plugins/passwords'
import authRoutes from './routes/auth'
import me from './routes/me'
import mePassword from './routes/me/password'
import authentication from './plugins/authentication'
import access from './plugins/access'
import idempotency from './plugins/idempotency'
import batchRoutes from './plugins/batch-routes'
import changeEvents from './plugins/change-events'
import uploads from './plugins/uploads'
import jobs from './plugins/jobs'
import families from './routes/families'
import invites from './routes/invites'
import admin from './routes/admin'
import children from './routes/children'
import records from './routes/records'
import measurementImports from './routes/measurement-import'
import attachments from './routes/attachments'
import avatars from './routes/avatars'
import staticFiles from './routes/static'
import childGrowth from './routes/growth'
import dueVaccines from './routes/due'
import health from './routes/health'
import docs from './routes/docs'
import growthStandards from './routes/growth-standards'
import report from './routes/report'
import vaccineSchedules from './routes/schedules'
import exportRoutes from './routes/export'
import changes from './routes/changes'
import batch from './routes/batch'
import events from './routes/events'
import calendarFeeds, { calendarFile } from './routes/calendar'
import push from './routes/push'
import webhooks from './routes/webhooks'
import notifications from './routes/notifications'
import shares from './routes/shares'
import shl from './routes/shl'
import shareSweep from './plugins/share-sweep'
import { namedSchemas } from './routes/schemas'

export interface AppOptions {
  db?: DbOptions
  /** Where logs go (default stdout). */
  logStream?: NodeJS.WritableStream
  /** Runs before any plugin or route is registered: tests use it to watch routes and responses. */
  setup?: (app: App) => void
  /** Validators and serializers made before the start (default: those the build wrote out, if any). */
  precompiled?: Precompiled
}

const REQUEST_ID = /^[A-Za-z0-9-]{1,64}$/

/** Secrets never reach the logs, whatever the level. */
export const REDACTED_PATHS = [
  'req.headers.authorization', 'req.headers.cookie', 'req.body', 'body', 'err.parameters', 'err.args',
  ...['password', 'newPassword', 'currentPassword', 'passwordHash', 'password_hash', 'passcode', 'link', 'key',
    'token', 'accessToken', 'refreshToken', 'inviteToken', 'tokenHash', 'token_hash']
    .flatMap(key => [key, `*.${key}`])
]

const CALENDAR_PATH = /^\/+api\/+calendar\//i
const SHARE_LINK_PATH = /^\/+api\/+shl\//i
const FILE_PATH = /^\/+(uploads|avatars)\//i

/**
 * Query parameters whose values are credentials: the service's own (an event
 * ticket, a sign-in's code, state and link) and those a client may send by
 * habit (an OAuth access_token, an API key), whether the service reads them or not.
 */
const SECRET_PARAMETERS = new Set([
  'ticket', 'code', 'state', 'link', 'access_token', 'refresh_token', 'id_token', 'token', 'key', 'api_key', 'apikey',
  'passcode', 'password', 'secret', 'client_secret', 'authorization'
])

/** A query string with the values of secret parameters left out, their names compared decoded and in any case. */
function loggedQuery (query: string): string {
  return query.replace(/([?&])([^&=]*)(=[^&]*)?/g, (part, separator: string, name: string, value: string | undefined) => {
    if (value === undefined) return part
    let plain = name
    try {
      plain = decodeURIComponent(name.replace(/\+/g, ' '))
    } catch {}
    return SECRET_PARAMETERS.has(plain.trim().toLowerCase()) ? `${separator}${name}=[redacted]` : part
  })
}

/**
 * A URL as the logs show it: a secret in the query string, a calendar feed's
 * token, a share link's token and a stored file's name in the path are
 * credentials, and are left out. The path is decoded first, since the
 * router decodes it too.
 */
function loggedUrl (url: string): string {
  const at = url.indexOf('?')
  const path = at === -1 ? url : url.slice(0, at)
  const query = at === -1 ? '' : loggedQuery(url.slice(at))
  let decoded = path
  try {
    decoded = decodeURIComponent(path)
  } catch {}
  if (CALENDAR_PATH.test(decoded)) return '/api/calendar/[redacted].ics' + query
  if (SHARE_LINK_PATH.test(decoded)) return '/api/shl/[redacted]' + query
  const file = FILE_PATH.exec(decoded)
  if (file !== null) return `/${file[1].toLowerCase()}/[redacted]` + query
  return path + query
}

/** A request as the logs show it. */
function loggedRequest (request: FastifyRequest): Record<string, unknown> {
  return {
    method: request.method,
    url: loggedUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort
  }
}

/** A plugin of the app, alone or with its options. */
type Registered = FastifyPluginAsync<any> | FastifyPluginCallback<any> | [FastifyPluginAsync<any> | FastifyPluginCallback<any>, object]

/**
 * Registers the plugins in order, giving the event loop a turn after each.
 * Registering never waits for I/O by itself: the turns let the database's
 * start (the migrations, the job queue's check) go on meanwhile.
 */
async function registerEach (instance: FastifyInstance<any, any, any, any, any>, plugins: Registered[]): Promise<void> {
  for (const entry of plugins) {
    const [plugin, opts] = Array.isArray(entry) ? entry : [entry, {}]
    await instance.register(plugin, opts)
    await new Promise(resolve => setImmediate(resolve))
  }
}

export type App = FastifyInstance<RawServerDefault, IncomingMessage, ServerResponse, FastifyBaseLogger, TypeBoxTypeProvider>

export async function buildApp (config: Config, options: AppOptions = {}): Promise<App> {
  const precompiled = 'precompiled' in options ? options.precompiled : loadPrecompiled()
  const app = Fastify({
    logger: {
      level: config.logLevel,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      serializers: { req: loggedRequest },
      // A stored file's name is its address: no log line carries one, whatever logged it.
      hooks: { streamWrite: withoutStoredNames },
      ...(options.logStream !== undefined ? { stream: options.logStream } : logDestination(config.production))
    },
    // A hop count is valid for proxy-addr, though Fastify's types only name the other forms.
    trustProxy: config.trustProxy as boolean | string[],
    bodyLimit: JSON_BODY_LIMIT,
    // A client that trickles its request in must not hold a connection open:
    // headers within HEADERS_TIMEOUT, the whole request within
    // REQUEST_TIMEOUT, idle keep-alive connections closed after
    // KEEP_ALIVE_TIMEOUT; checked every second.
    requestTimeout: config.requestTimeout,
    keepAliveTimeout: config.keepAliveTimeout,
    http: { headersTimeout: config.headersTimeout, connectionsCheckingInterval: 1000 },
    clientErrorHandler,
    frameworkErrors: frameworkErrors(config.production),
    childLoggerFactory: lazyChildLogger,
    genReqId: request => {
      const given = request.headers['x-request-id']
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
    },
    schemaController: { compilersFactory: { buildValidator: validatorFactory(precompiled) as never, buildSerializer: serializerFactory(precompiled) as never } },
    // Migrations and the job queue's installation may wait for another
    // instance starting at the same time: longer than Fastify's 10 s.
    pluginTimeout: 60_000
  }).withTypeProvider<TypeBoxTypeProvider>()
  options.setup?.(app)

  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    done()
  })

  // While shutting down, answers close their connection, so that a keep-alive
  // client does not hold the server open once its request is done.
  let closing = false
  app.addHook('preClose', async () => { closing = true })
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close')
    done(null, payload)
  })

  await registerEach(app, [
    [configPlugin, { config }], errors, validation, security, [db, options.db ?? {}], handover,
    [openapi, { schemas: namedSchemas }], growth, responseCache, conditionalReads, passwords, tokens,
    authentication, access, idempotency, batchRoutes, changeEvents, uploads, jobs, shareSweep,
    health, docs, authRoutes, invites, mePassword, staticFiles,
    [calendarFile, { prefix: '/api/calendar' }], events, [shl, { prefix: '/api/shl' }]
  ])

  // Everything registered here needs a valid access token.
  await app.register(async function protectedRoutes (api) {
    api.addHook('onRequest', api.authenticate)
    await registerEach(api, [
      me, calendarFeeds, notifications, growthStandards, vaccineSchedules, families, admin, children,
      records, measurementImports, attachments, avatars, childGrowth, report, dueVaccines, exportRoutes,
      changes, batch, push, shares, webhooks
    ])
  })

  return app
}
