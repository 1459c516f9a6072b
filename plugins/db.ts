import type { FastifyBaseLogger } from 'fastify'
import fp from 'fastify-plugin'
import { createRequestSql, createSql, LOOKUP_POOL_SIZE, POOL_SIZE, type Sql } from '../db/client'
import { PoolWatch } from '../db/pool-watch'
import { startEmbeddedDatabase, type EmbeddedDatabase } from '../db/embedded'
import { migrate } from '../db/migrate'
import { containWriteAfterClose } from '../db/write-after-close'

declare module 'fastify' {
  interface FastifyInstance {
    /** The request pool. A request's own work goes through `request.db` (plugins/handover.ts), which may be a transaction it is held in. */
    sql: Sql
    /**
     * The lookup pool (LOOKUP_POOL_SIZE connections): only for a request's
     * first read, of its session and target, which takes no lock and waits
     * on none, so that no query waits long behind another on a connection.
     */
    lookups: Sql
    pool: PoolWatch
    /** The database's URL, for a client of another library (the job queue's). */
    databaseUrl: string
    /**
     * Settled once the migrations are applied, while the app is still being
     * registered; without migrations (`migrate: false`), once the app is
     * ready. A plugin's first use of the database waits for it.
     */
    migrated: Promise<void>
  }
}

export interface DbOptions {
  /** Apply pending migrations before the app serves (default true). */
  migrate?: boolean
  /** Directory of the migration files (default ./migrations). */
  migrationsDir?: string
}

/** Applies the pending migrations on a connection of their own, closed once they are done. */
async function applyMigrations (url: string, dir: string | undefined, log: FastifyBaseLogger): Promise<void> {
  const migrating = createSql(url, { max: 1 })
  try {
    await migrate(migrating, { dir, log })
  } finally {
    await migrating.end({ timeout: 5 })
  }
}

/**
 * The database: a postgres.js pool on the configured server, or on an embedded
 * PostgreSQL under DATA_DIR when none is configured. Closed with the app.
 */
export default fp<DbOptions>(async function db (fastify, opts) {
  const { config } = fastify
  containWriteAfterClose(message => fastify.log.warn(message))
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
  // They run while the rest of the app is registered; the app is ready, and
  // listens, once they are applied. Without them, the database is first
  // touched when the app is ready.
  let ready: () => void = () => {}
  const applying = opts.migrate === false ? null : applyMigrations(url, opts.migrationsDir, fastify.log)
  // A failure is thrown when the app is made ready, not where nobody waits for it.
  applying?.catch(() => {})
  const migrated = applying ?? new Promise<void>(resolve => { ready = resolve })
  fastify.decorate('migrated', migrated)
  fastify.addHook('onReady', async () => {
    ready()
    try {
      await migrated
    } catch (error) {
      await embedded?.stop()
      throw error
    }
  })

  const sql = createRequestSql(url, fastify.config.statementTimeout)
  const lookups = createRequestSql(url, fastify.config.statementTimeout, LOOKUP_POOL_SIZE)
  // The request pool's first connection opens beside the migrations', for
  // the job queue's check that follows them and the first requests.
  if (applying !== null) sql`select 1`.catch(() => {})
  fastify.decorate('sql', sql)
  fastify.decorate('lookups', lookups)
  fastify.decorate('databaseUrl', url)
  fastify.decorate('pool', new PoolWatch(sql, POOL_SIZE))
  fastify.addHook('onClose', async () => {
    // A migration under way is not cut short by a close.
    await applying?.catch(() => {})
    await Promise.all([sql.end({ timeout: 5 }), lookups.end({ timeout: 5 })])
    await embedded?.stop()
  })
}, { name: 'db', dependencies: ['config'] })
