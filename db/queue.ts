import type { Logger, LogLevel } from 'graphile-worker'
import type { Pool } from 'pg'
import { CLOSE_WAIT_MS, settledWithin } from '../lib/waiting'

// graphile-worker and pg load when the queue is first installed or run:
// a start on an installed queue answers before either has loaded.
export const graphileWorker = (): typeof import('graphile-worker') => require('graphile-worker')

/**
 * The job queue: graphile-worker, in a schema of its own in the service's
 * database. Jobs are added with its SQL (graphile_worker.add_job) in the
 * transaction that records what they are for (sql/queue.ts), so a job exists
 * exactly when its row committed.
 */
export const QUEUE_SCHEMA = 'graphile_worker'

export type QueueLog = (level: 'error' | 'warn' | 'debug', message: string, meta?: unknown) => void

/** Where tasks tell what they did: the service's logger. */
export interface JobLog {
  info: (meta: object, message: string) => void
  warn: (meta: object, message: string) => void
}

/** graphile-worker's logger, writing to the service's: its information is debug, the rest as it says. */
export function queueLogger (log: QueueLog): Logger {
  return new (graphileWorker().Logger)(() => (level: LogLevel, message: string, meta?: unknown) => {
    log(level === 'error' ? 'error' : level === 'warning' ? 'warn' : 'debug', message, meta)
  })
}

/** Connections of the queue's, and how to end them. */
export interface QueuePool {
  pool: Pool
  /** Ends every connection, and returns once each has closed. */
  end: () => Promise<void>
}

/**
 * A pool for graphile-worker, given to it rather than made by it: it ends a
 * pool of its own without waiting, its error listeners taken off first, so a
 * connection still closing would throw when the server ends it. pg's own
 * `end` does not wait for the connections to close either: this one does,
 * for up to CLOSE_WAIT_MS.
 */
export function queuePool (url: string, max: number, onIdleError: (error: Error) => void = () => {}): QueuePool {
  const pool: Pool = new (require('pg') as typeof import('pg')).Pool({ connectionString: url, max })
  const open = new Set<Promise<void>>()
  pool.on('error', onIdleError)
  pool.on('connect', client => {
    // A connection in use gives its error to its query; one closing after use has nothing left to tell.
    client.on('error', () => {})
    const closed = new Promise<void>(resolve => client.once('end', resolve))
    open.add(closed)
    void closed.then(() => open.delete(closed))
  })
  return {
    pool,
    end: async () => {
      // Closes take milliseconds; a connection that does not say so within
      // the bound is left to the server rather than hold up a start or a close.
      await settledWithin((async () => {
        await pool.end()
        await Promise.all(open)
      })(), CLOSE_WAIT_MS)
    }
  }
}

/**
 * What the queue's schema says of the graphile-worker that installed it, in
 * its comment: a start finds it there and installs nothing (sql/queue.ts).
 */
export function queueInstaller (): string {
  return `graphile-worker ${(require('graphile-worker/package.json') as { version: string }).version}`
}

/** Installs or upgrades the queue's schema: graphile-worker's own migrations, each once whatever the instances; then notes who installed it. */
export async function installQueue (url: string, log: QueueLog): Promise<void> {
  const { pool, end } = queuePool(url, 1)
  try {
    await graphileWorker().runMigrations({ pgPool: pool, schema: QUEUE_SCHEMA, logger: queueLogger(log) })
    await pool.query(`comment on schema ${QUEUE_SCHEMA} is '${queueInstaller().replace(/'/g, "''")}'`)
  } finally {
    await end()
  }
}

/** The queue's tasks: the scan for reminders due, the sending of one reminder to one channel, and the deliveries of one webhook. */
export const TASKS = {
  scan: 'reminders_scan',
  send: 'reminders_send',
  webhook: 'webhooks_deliver'
} as const
