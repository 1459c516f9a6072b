import { runMigrations, Logger, type LogLevel } from 'graphile-worker'

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
  return new Logger(() => (level: LogLevel, message: string, meta?: unknown) => {
    log(level === 'error' ? 'error' : level === 'warning' ? 'warn' : 'debug', message, meta)
  })
}

/** Installs or upgrades the queue's schema: graphile-worker's own migrations, each once whatever the instances. */
export async function installQueue (url: string, log: QueueLog): Promise<void> {
  await runMigrations({ connectionString: url, schema: QUEUE_SCHEMA, maxPoolSize: 1, logger: queueLogger(log) })
}

/** The queue's tasks: the scan for reminders due, the sending of one reminder to one channel, and the deliveries of one webhook. */
export const TASKS = {
  scan: 'reminders_scan',
  send: 'reminders_send',
  webhook: 'webhooks_deliver'
} as const
