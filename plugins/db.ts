import fp from 'fastify-plugin'
import postgres from 'postgres'
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

declare module 'fastify' {
  interface FastifyInstance {
    sql: Sql
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

  const sql = createSql(url)
  fastify.decorate('sql', sql)
  fastify.addHook('onClose', async () => {
    await sql.end({ timeout: 5 })
    await embedded?.stop()
  })

  if (opts.migrate !== false) {
    try {
      await migrate(sql, { dir: opts.migrationsDir, log: fastify.log })
    } catch (error) {
      await sql.end({ timeout: 5 })
      await embedded?.stop()
      throw error
    }
  }
}, { name: 'db', dependencies: ['config'] })
