import { EventEmitter } from 'node:events'
import type { FastifyBaseLogger } from 'fastify'
import { run, type Runner, type TaskList, type WorkerEvents } from 'graphile-worker'
import type { Sql } from '../db/client'
import { QUEUE_SCHEMA, queueLogger, type QueueLog } from '../db/queue'
import { forceUnlockWorkers } from '../sql/queue'

/** How often a runner looks for jobs that have come due (retries, the end of quiet hours), in milliseconds. */
const POLL_INTERVAL_MS = 1000
/** How long a runner whose worker ended waits between tries to get its jobs back, while the database is away, in milliseconds. */
const RECOVERY_RETRY_MS = 1000

/** Some of the queue's tasks, on workers of their own: a runner takes only the jobs of its own tasks. */
export interface RunnerSpec {
  /** What the log calls it. */
  name: string
  /** Jobs it works on at once. */
  concurrency: number
  taskList: TaskList
}

/** graphile-worker's connections of a runner: one that listens for new jobs, and one for each job being taken or finished. */
export function runnerConnections (spec: Pick<RunnerSpec, 'concurrency'>): number {
  return spec.concurrency + 1
}

export interface KeptRunner {
  /** Stops it: the jobs in work finish first. */
  stop: () => Promise<void>
}

/**
 * A graphile-worker runner of some tasks, kept running. A worker that cannot
 * record the end of its job, because the database is away, ends for good,
 * and its job stays locked with its queue (a webhook's deliveries, the
 * reminders' scan) for hours. Such workers are noted here; once the database
 * answers, their jobs are unlocked and the runner starts afresh with all its
 * workers. The job then runs again: at least once.
 */
export async function keepRunner (url: string, sql: Sql, spec: RunnerSpec, log: FastifyBaseLogger, queueLog: QueueLog): Promise<KeptRunner> {
  const where = { runner: spec.name }
  let closing = false
  const events: WorkerEvents = new EventEmitter()
  const ended = new Set<string>()
  events.on('worker:fatalError', ({ worker }) => {
    ended.add(worker.workerId)
    recover()
  })
  const start = async (): Promise<Runner> => {
    const started = await run({
      connectionString: url,
      schema: QUEUE_SCHEMA,
      concurrency: spec.concurrency,
      maxPoolSize: runnerConnections(spec),
      pollInterval: POLL_INTERVAL_MS,
      noHandleSignals: true,
      logger: queueLogger(queueLog),
      events,
      taskList: spec.taskList,
      // No cron, and no crontab file read from the working folder.
      parsedCronItems: []
    })
    started.promise.catch(error => { if (!closing) log.error({ ...where, err: error }, 'job queue: the worker stopped') })
    return started
  }
  // null while the runner is being replaced.
  let runner: Runner | null = await start()

  let recovering: Promise<void> | null = null
  function recover (): void {
    if (recovering !== null) return
    recovering = (async () => {
      while (!closing && (ended.size > 0 || runner === null)) {
        try {
          if (ended.size > 0) {
            const workers = [...ended]
            await forceUnlockWorkers(sql, workers)
            for (const worker of workers) ended.delete(worker)
            log.warn({ ...where, workers }, 'job queue: a worker ended while the database was away; its jobs are unlocked and the worker starts again')
            const stopping = runner
            runner = null
            await stopping?.stop()
          }
          if (!closing && runner === null) runner = await start()
        } catch (error) {
          log.warn({ ...where, err: error }, 'job queue: the worker could not start again yet; trying again')
          await new Promise(resolve => setTimeout(resolve, RECOVERY_RETRY_MS))
        }
      }
    })().finally(() => {
      recovering = null
      // A worker that ended as the last round finished.
      if (!closing && (ended.size > 0 || runner === null)) recover()
    })
  }

  return {
    async stop () {
      closing = true
      await recovering
      await runner?.stop()
    }
  }
}
