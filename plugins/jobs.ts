import { EventEmitter } from 'node:events'
import fp from 'fastify-plugin'
import { run, type Runner, type WorkerEvents } from 'graphile-worker'
import type { PendingQuery, Row } from 'postgres'
import { LOCKS, whileLocked } from '../db/locks'
import { installQueue, QUEUE_SCHEMA, queueLogger, TASKS, type JobLog, type QueueLog } from '../db/queue'
import { reminderTasks } from '../domain/reminders/tasks'
import { webhookTasks } from '../domain/webhooks/tasks'
import { addJob, forceUnlockWorkers } from '../sql/queue'
import { queueEveryWebhook } from '../sql/webhooks'

declare module 'fastify' {
  interface FastifyInstance {
    reminders: {
      /** Asks for a scan now, on whichever instance's worker takes it first. */
      scanSoon: () => Promise<void>
    }
  }
}

/** Jobs one instance works on at once: sends wait on the network, not on the database. */
export const QUEUE_CONCURRENCY = 2
/** graphile-worker's own connections: one that listens for new jobs, and one for each job being taken or finished. */
export const QUEUE_POOL_SIZE = QUEUE_CONCURRENCY + 1
/** How often the worker looks for jobs that have come due (retries, the end of quiet hours), in milliseconds. */
const POLL_INTERVAL_MS = 1000
/** How long a worker that ended waits between tries to get its jobs back, while the database is away, in milliseconds. */
const RECOVERY_RETRY_MS = 1000
/** How often each instance makes sure the next minute's scan is queued, in milliseconds. */
export const SCAN_TICK_MS = 15_000

/** The scan's one job: whatever the instances, one waits at a time, and scans run one after the other. */
const SCAN_JOB = { jobKey: 'reminders_scan', queueName: 'reminders-scan', maxAttempts: 3 }

/**
 * The job queue: graphile-worker's queue in the service's database, its
 * schema installed at start, and, unless JOB_WORKER=off, its worker, which
 * runs every background task of the service: the reminders' scan and
 * sending, the webhooks' deliveries. Every instance keeps the next minute's
 * reminder scan queued under one job key, so it runs once a minute in all.
 * graphile-worker's own cron is not used: when the database is away at a
 * minute's tick it stops the whole worker for good. Stopped with the app:
 * the jobs in work finish first.
 */
export default fp(async function jobs (fastify) {
  const { config, sql } = fastify
  const log: QueueLog = (level, message, meta) => fastify.log[level]({ queue: meta }, `job queue: ${message}`)
  // graphile-worker creates its schema with no lock of its own: instances starting at once take turns.
  await whileLocked(sql, LOCKS.jobQueue, async () => { await installQueue(fastify.databaseUrl, log) })
  // Each webhook gets a run, for changes whose job a lost queue or a restore did not make.
  await queueEveryWebhook(sql)

  function scanJob (runAt: PendingQuery<Row[]>, mode: 'replace' | 'preserve_run_at') {
    return sql`select ${addJob(sql, TASKS.scan, sql`'{}'::json`, { ...SCAN_JOB, runAt, jobKey: sql`${SCAN_JOB.jobKey}::text`, jobKeyMode: mode })}`
  }

  fastify.decorate('reminders', {
    async scanSoon () {
      await scanJob(sql<Row[]>`now()`, 'replace')
    }
  })
  if (!config.jobWorker) return

  const taskLog: JobLog = {
    info: (meta, message) => fastify.log.info(meta, message),
    warn: (meta, message) => fastify.log.warn(meta, message)
  }
  let closing = false
  // A worker that cannot record the end of its job, because the database is
  // away, ends for good, and its job stays locked with its queue (a webhook's
  // deliveries, the reminders' scan) for hours. Such workers are noted here;
  // once the database answers, their jobs are unlocked and the runner starts
  // afresh with all its workers. The job then runs again: at least once.
  const events: WorkerEvents = new EventEmitter()
  const ended = new Set<string>()
  events.on('worker:fatalError', ({ worker }) => {
    ended.add(worker.workerId)
    recover()
  })
  const start = async (): Promise<Runner> => {
    const started = await run({
      connectionString: fastify.databaseUrl,
      schema: QUEUE_SCHEMA,
      concurrency: QUEUE_CONCURRENCY,
      maxPoolSize: QUEUE_POOL_SIZE,
      pollInterval: POLL_INTERVAL_MS,
      noHandleSignals: true,
      logger: queueLogger(log),
      events,
      taskList: { ...reminderTasks(sql, config, taskLog), ...webhookTasks(sql, config, taskLog, () => closing) },
      // No cron, and no crontab file read from the working folder.
      parsedCronItems: []
    })
    started.promise.catch(error => { if (!closing) fastify.log.error({ err: error }, 'job queue: the worker stopped') })
    return started
  }
  // null while a runner is being replaced.
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
            fastify.log.warn({ workers }, 'job queue: a worker ended while the database was away; its jobs are unlocked and the worker starts again')
            const stopping = runner
            runner = null
            await stopping?.stop()
          }
          if (!closing && runner === null) runner = await start()
        } catch (error) {
          fastify.log.warn({ err: error }, 'job queue: the worker could not start again yet; trying again')
          await new Promise(resolve => setTimeout(resolve, RECOVERY_RETRY_MS))
        }
      }
    })().finally(() => {
      recovering = null
      // A worker that ended as the last round finished.
      if (!closing && (ended.size > 0 || runner === null)) recover()
    })
  }

  // While the database is away the tick fails; it says so once, and again once it works.
  let failing = false
  async function tick (): Promise<void> {
    try {
      await scanJob(sql<Row[]>`date_trunc('minute', now()) + interval '1 minute'`, 'preserve_run_at')
      if (failing) fastify.log.info('reminders: the scan is queued again')
      failing = false
    } catch (error) {
      if (!failing) fastify.log.warn({ err: error }, 'reminders: the next scan could not be queued; trying again')
      failing = true
    }
  }
  await tick()
  const ticking = setInterval(() => { void tick() }, SCAN_TICK_MS)
  ticking.unref()

  fastify.addHook('onClose', async () => {
    closing = true
    clearInterval(ticking)
    await recovering
    await runner?.stop()
  })
}, { name: 'jobs', dependencies: ['db', 'config'] })
