import fp from 'fastify-plugin'
import postgres from 'postgres'
import { answeringSocket } from '../lib/db-answers'
import { startEmbeddedDatabase, type EmbeddedDatabase } from '../lib/embedded-db'
import { migrate } from '../sql/migrations'

export type Sql = postgres.Sql<{}>
export type Tx = postgres.TransactionSql<{}>
/** What the query functions of sql/ run on: the pool or a transaction. */
export type Db = Sql | Tx

const DATE = 1082
const INT8 = 20
const NUMERIC = 1700

/**
 * Opens a pool with the project's type mapping: `date` stays the `YYYY-MM-DD`
 * text PostgreSQL sends (no time zone can shift it), `numeric` and `int8`
 * become JSON numbers.
 */
export function createSql (url: string, options: postgres.Options<{}> = {}): Sql {
  return postgres(url, {
    max: 10,
    connect_timeout: 5,
    // While the database is down, requests fail at once with a 503 instead of
    // waiting through growing reconnection delays.
    backoff: (retries: number) => Math.min(0.1 * retries, 0.5),
    idle_timeout: 60,
    onnotice: () => {},
    ...options,
    types: {
      date: { to: DATE, from: [DATE], serialize: (x: string) => x, parse: (x: string) => x },
      numeric: { to: NUMERIC, from: [NUMERIC], serialize: (x: number) => String(x), parse: (x: string) => Number(x) },
      int8: { to: INT8, from: [INT8], serialize: (x: number) => String(x), parse: (x: string) => Number(x) }
    }
  }) as unknown as Sql
}

/** How long a request waits for its database to answer before it is a 503. */
export const ANSWER_TIMEOUT_MS = 5000
/** How long every connection of the pool may stay taken before the pool counts as saturated. */
export const SATURATED_AFTER_MS = 5000
const POOL_SIZE = 10

/**
 * Counts the connections that transactions and reservations hold (those that
 * wait for one included), and says since when all of them have been taken.
 * Single queries hold a connection for one round trip only, which the answer
 * timeout bounds.
 */
export class PoolWatch {
  private held = 0
  private fullSince: number | null = null

  constructor (sql: Sql, readonly size: number) {
    const begin = sql.begin.bind(sql) as (...args: unknown[]) => Promise<unknown>
    const reserve = sql.reserve.bind(sql)
    Object.assign(sql, {
      begin: (...args: unknown[]) => {
        this.take()
        return begin(...args).finally(() => this.give())
      },
      reserve: async () => {
        this.take()
        try {
          const reserved = await reserve()
          const release = reserved.release.bind(reserved)
          let released = false
          reserved.release = () => {
            if (!released) this.give()
            released = true
            release()
          }
          return reserved
        } catch (error) {
          this.give()
          throw error
        }
      }
    })
  }

  private take (): void {
    this.held += 1
    if (this.held >= this.size && this.fullSince === null) this.fullSince = Date.now()
  }

  private give (): void {
    this.held -= 1
    if (this.held < this.size) this.fullSince = null
  }

  /** Connections held by transactions and reservations, and those waiting for one. */
  get inUse (): number {
    return this.held
  }

  /** True once no connection has been free for SATURATED_AFTER_MS. */
  get saturated (): boolean {
    return this.fullSince !== null && Date.now() - this.fullSince >= SATURATED_AFTER_MS
  }
}

/**
 * The pool a request runs on: every statement limited by `statement_timeout`,
 * and, on a plain connection, a query unanswered for ANSWER_TIMEOUT_MS fails
 * (the socket cannot be watched under TLS, where the server's own timeouts
 * and TCP keep-alive remain).
 */
export function createRequestSql (url: string, statementTimeout: number): Sql {
  const sslmode = new URL(url).searchParams.get('sslmode')
  const plain = sslmode === null || sslmode === 'disable'
  return createSql(url, {
    max: POOL_SIZE,
    connection: { statement_timeout: statementTimeout },
    ...(plain ? { socket: answeringSocket(ANSWER_TIMEOUT_MS) } : {})
  })
}

declare module 'fastify' {
  interface FastifyInstance {
    sql: Sql
    pool: PoolWatch
  }
}

export interface DbOptions {
  /** Apply pending migrations before the app serves (default true). */
  migrate?: boolean
  /** Directory of the migration files (default ./migrations). */
  migrationsDir?: string
}

/**
 * The database: a postgres.js pool on the configured server, or on an embedded
 * PostgreSQL under DATA_DIR when none is configured. Closed with the app.
 */
export default fp<DbOptions>(async function db (fastify, opts) {
  const { config } = fastify
  let embedded: EmbeddedDatabase | null = null
  let url: string
  if (config.database.kind === 'embedded') {
    embedded = await startEmbeddedDatabase(config.database.dir, fastify.log)
    url = embedded.url
  } else {
    url = config.database.url
  }

  // Migrations may wait for another instance's lock and build indexes for
  // long: they run on a connection of their own, without the request limits.
  if (opts.migrate !== false) {
    const migrating = createSql(url, { max: 1 })
    try {
      await migrate(migrating, { dir: opts.migrationsDir, log: fastify.log })
    } catch (error) {
      await migrating.end({ timeout: 5 })
      await embedded?.stop()
      throw error
    }
    await migrating.end({ timeout: 5 })
  }

  const sql = createRequestSql(url, fastify.config.statementTimeout)
  fastify.decorate('sql', sql)
  fastify.decorate('pool', new PoolWatch(sql, POOL_SIZE))
  fastify.addHook('onClose', async () => {
    await sql.end({ timeout: 5 })
    await embedded?.stop()
  })
}, { name: 'db', dependencies: ['config'] })
