import { EventEmitter } from 'node:events'
import type { FastifyBaseLogger } from 'fastify'
import type { Runner, TaskList, WorkerEvents } from 'graphile-worker'
import type { Sql } from '../db/client'
import { graphileWorker, QUEUE_SCHEMA, queueLogger, queuePool, type QueueLog } from '../db/queue'
import { forceUnlockWorkers } from '../sql/queue'
import { capacities, type Capacity } from './job-capacity'

/** How often each idle worker looks for jobs that have come due (retries, the end of quiet hours), in milliseconds. */
const POLL_INTERVAL_MS = 1000
/** How long a runner whose worker ended waits between tries to get its jobs back, while the database is away, in milliseconds. */
const RECOVERY_RETRY_MS = 1000

/** The queue's tasks, and the jobs of each that the runner works on at once: it has as many workers as these add up to. */
export interface RunnerSpec {
  capacity: Capacity
  taskList: TaskList
}

/** The runner's workers. */
function runnerWorkers (capacity: Capacity): number {
  return Object.values(capacity).reduce((sum, jobs) => sum + jobs, 0)
}

export interface KeptRunner {
  /** Stops it: the jobs in work finish first. */
  stop: () => Promise<void>
}

/**
 * A graphile-worker runner of the queue's tasks, each with a capacity of its
 * own (plugins/job-capacity.ts), kept running. Its connections: one that
 * listens for new jobs, and one for each job being taken or finished. A
 * worker that cannot record the end of its job, because the database is
 * away, ends for good, and its job stays locked with its queue (a webhook's
 * deliveries, the reminders' scan) for hours. Such workers are noted here;
 * once the database answers, their jobs are unlocked and the runner starts
 * afresh with all its workers. The job then runs again: at least once.
 * The runner starts in the background, as a recovery does, so that a start
 * does not wait for it: jobs added meanwhile wait in the queue.
 */
export function keepRunner (url: string, sql: Sql, spec: RunnerSpec, log: FastifyBaseLogger, queueLog: QueueLog): KeptRunner {
  let closing = false
  const events: WorkerEvents = new EventEmitter()
  const { forbiddenFlags, taskList } = capacities(events, spec.capacity, spec.taskList)
  const ended = new Set<string>()
  events.on('worker:fatalError', ({ worker }) => {
    ended.add(worker.workerId)
    recover()
  })
  // The runner's connections: one that listens, and one for each worker.
  const { pool, end } = queuePool(url, runnerWorkers(spec.capacity) + 1, error => {
    if (!closing) log.warn({ err: error }, 'job queue: an idle connection failed')
  })
  const start = async (): Promise<Runner> => {
    const started = await graphileWorker().run({
      pgPool: pool,
      schema: QUEUE_SCHEMA,
      concurrency: runnerWorkers(spec.capacity),
      pollInterval: POLL_INTERVAL_MS,
      noHandleSignals: true,
      logger: queueLogger(queueLog),
      events,
      taskList,
      forbiddenFlags,
      // No cron, and no crontab file read from the working folder.
      parsedCronItems: []
    })
    started.promise.catch(error => { if (!closing) log.error({ err: error }, 'job queue: the worker stopped') })
    return started
  }
  // null until it has started, and while it is being replaced.
  let runner: Runner | null = null

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
            log.warn({ workers }, 'job queue: a worker ended while the database was away; its jobs are unlocked and the worker starts again')
            const stopping = runner
            runner = null
            await stopping?.stop()
          }
          if (!closing && runner === null) runner = await start()
        } catch (error) {
          log.warn({ err: error }, 'job queue: the worker could not start yet; trying again')
          await new Promise(resolve => setTimeout(resolve, RECOVERY_RETRY_MS))
        }
      }
    })().finally(() => {
      recovering = null
      // A worker that ended as the last round finished.
      if (!closing && (ended.size > 0 || runner === null)) recover()
    })
  }
  // After the start's own work, so that the service answers first.
  setImmediate(recover)

  return {
    async stop () {
      closing = true
      await recovering
      await runner?.stop()
      await end()
    }
  }
}
