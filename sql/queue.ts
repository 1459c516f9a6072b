import type { PendingQuery, Row } from 'postgres'
import type { Db } from '../db/client'
import { QUEUE_SCHEMA, queueInstaller, TASKS } from '../db/queue'

export interface JobOptions {
  /** When it may run; now when left out. */
  runAt?: PendingQuery<Row[]>
  /**
   * One job per key: a second add replaces the waiting one (`replace`), does
   * so but keeps its run_at (`preserve_run_at`), or leaves any existing one
   * (`unsafe_dedupe`). A job already running loses its key to the new one.
   */
  jobKey?: PendingQuery<Row[]>
  jobKeyMode?: 'replace' | 'preserve_run_at' | 'unsafe_dedupe'
  /** Jobs of one queue run one at a time, in order, whatever the instances. */
  queueName?: string | PendingQuery<Row[]>
  /** The queue's own retries, for failures of the job itself (a database that went away); graphile-worker waits e^attempts seconds between them. */
  maxAttempts?: number
  /** Flags of the job besides its task's name, which every job carries (a text[] expression): marks to find it by. */
  flags?: PendingQuery<Row[]>
}

/**
 * A call of graphile_worker.add_job, as an expression: run it in the
 * transaction that records what the job is for. The job carries its task's
 * name as a flag: a worker skips the tasks at capacity (plugins/jobs.ts). `payload`, `runAt`,
 * `jobKey`, `queueName` and `flags` may be SQL fragments, so that one statement may
 * add a job per row.
 */
export function addJob (db: Db, task: string, payload: PendingQuery<Row[]>, options: JobOptions = {}): PendingQuery<Row[]> {
  return db`${db(QUEUE_SCHEMA)}.add_job(
    ${task},
    ${payload},
    queue_name => ${typeof options.queueName === 'object' ? options.queueName : db`${options.queueName ?? null}::text`},
    run_at => ${options.runAt ?? db`null::timestamptz`},
    max_attempts => ${options.maxAttempts ?? 10}::integer,
    job_key => ${options.jobKey ?? db`null::text`},
    job_key_mode => ${options.jobKeyMode ?? 'replace'}::text,
    flags => array[${task}::text] || ${options.flags ?? db`'{}'::text[]`}
  )`
}

/**
 * Unlocks the jobs and queues that the workers named held: a worker that
 * could not record the end of its job (the database was away) has ended,
 * and its job would stay locked, with its queue, for hours.
 */
export async function forceUnlockWorkers (db: Db, workerIds: string[]): Promise<void> {
  await db`select ${db(QUEUE_SCHEMA)}.force_unlock_workers(${workerIds}::text[])`
}

/** Whether the queue's schema was installed by the graphile-worker this service runs, as its comment says: then a start installs nothing. */
export async function queueInstalled (db: Db): Promise<boolean> {
  const [{ installer }] = await db<Array<{ installer: string | null }>>`
    select obj_description(to_regnamespace(${QUEUE_SCHEMA}), 'pg_namespace') as installer`
  return installer === queueInstaller()
}

/**
 * Whether a worker has work: a channel to send reminders through (the scan
 * finds nothing without one), a webhook, or a job of another task than the
 * scan waiting in the queue.
 */
export async function queueHasWork (db: Db): Promise<boolean> {
  const [{ work }] = await db<Array<{ work: boolean }>>`
    select exists (select 1 from notification_channels)
        or exists (select 1 from webhooks)
        or exists (select 1 from ${db(QUEUE_SCHEMA)}.jobs where task_identifier <> ${TASKS.scan}) as work`
  return work
}
