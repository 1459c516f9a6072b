import fp from 'fastify-plugin'
import type { PendingQuery, Row } from 'postgres'
import { LOCKS, whileLocked } from '../db/locks'
import { installQueue, TASKS, type JobLog, type QueueLog } from '../db/queue'
import { reminderTasks } from '../domain/reminders/tasks'
import { webhookTasks } from '../domain/webhooks/tasks'
import { addJob, queueHasWork, queueInstalled } from '../sql/queue'
import { queueEveryWebhook } from '../sql/webhooks'
import { keepRunner } from './job-runner'

declare module 'fastify' {
  interface FastifyInstance {
    reminders: {
      /** Asks for a scan now, on whichever instance's worker takes it first; starts this instance's worker if it waits for work. */
      scanSoon: () => Promise<void>
    }
    jobs: {
      /** Starts this instance's worker if it waits for work: a webhook or a channel was just made. */
      wanted: () => void
    }
  }
}

/**
 * Jobs of each task an instance works on at once, each on workers the
 * others cannot take. Webhooks' deliveries wait on the network, not on the
 * database, and one maker's take one worker at a time (their queue): four
 * makers' at once. Reminders' sends, one user's at a time (theirs), on two;
 * the scan on one of its own, so that slow channels never hold it.
 */
export const CAPACITY = { [TASKS.webhook]: 4, [TASKS.send]: 2, [TASKS.scan]: 1 }
/** How often each instance makes sure the next minute's scan is queued, in milliseconds. */
export const SCAN_TICK_MS = 15_000

/** The scan's one job: whatever the instances, one waits at a time, and scans run one after the other. */
const SCAN_JOB = { jobKey: 'reminders_scan', queueName: 'reminders-scan', maxAttempts: 3 }

/**
 * The job queue: graphile-worker's queue in the service's database, its
 * schema installed at start, and, unless JOB_WORKER=off, its worker, whose
 * workers are shared out among the tasks so that no kind of work waits
 * behind another: the reminders' scan and sending, the webhooks'
 * deliveries. Every instance keeps the next minute's reminder scan queued
 * under one job key, so it runs once a minute in all.
 * graphile-worker's own cron is not used: when the database is away at a
 * minute's tick it stops the whole worker for good. Stopped with the app:
 * the jobs in work finish first.
 */
export default fp(async function jobs (fastify) {
  const { config, sql } = fastify
  const log: QueueLog = (level, message, meta) => fastify.log[level]({ queue: meta }, `job queue: ${message}`)

  function scanJob (runAt: PendingQuery<Row[]>, mode: 'replace' | 'preserve_run_at') {
    return sql`select ${addJob(sql, TASKS.scan, sql`'{}'::json`, { ...SCAN_JOB, runAt, jobKey: sql`${SCAN_JOB.jobKey}::text`, jobKeyMode: mode })}`
  }

  fastify.decorate('reminders', {
    async scanSoon () {
      await scanJob(sql<Row[]>`now()`, 'replace')
      startWorker()
    }
  })
  fastify.decorate('jobs', { wanted: () => { startWorker() } })
  const taskLog: JobLog = {
    info: (meta, message) => fastify.log.info(meta, message),
    warn: (meta, message) => fastify.log.warn(meta, message)
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

  let closing = false
  let runner: { stop: () => Promise<void> } | null = null
  let ticking: NodeJS.Timeout | undefined
  let waiting: NodeJS.Timeout | undefined

  /** The worker and the scan's tick, once: the worker's libraries load here. */
  function startWorker (): void {
    if (!config.jobWorker || runner !== null || closing) return
    clearInterval(waiting)
    runner = keepRunner(fastify.databaseUrl, sql, {
      capacity: CAPACITY,
      taskList: { ...reminderTasks(sql, config, taskLog), ...webhookTasks(sql, config, taskLog, () => closing) }
    }, fastify.log, log)
    void tick()
    ticking = setInterval(() => { void tick() }, SCAN_TICK_MS)
    ticking.unref()
  }

  /** Whether there is work for a worker; while the database is away, as if there were. */
  async function work (): Promise<boolean> {
    return await queueHasWork(sql).catch(() => true)
  }

  /** The queue installed, the webhooks' runs queued, and the worker started if there is work. */
  async function start (): Promise<void> {
    begun = true
    // graphile-worker creates its schema with no lock of its own: instances starting at once take turns.
    // A queue this version installed is left as it is.
    if (!(await queueInstalled(sql))) await whileLocked(sql, LOCKS.jobQueue, async () => { await installQueue(fastify.databaseUrl, log) })
    // Each webhook gets a run, for changes whose job a lost queue or a restore did not make.
    await queueEveryWebhook(sql)
    if (!config.jobWorker || closing) return
    // The worker starts when there is work for it: a channel to send reminders
    // through, a webhook, or a job waiting. Until then its libraries stay
    // unloaded, and every SCAN_TICK_MS the instance looks again (another
    // instance may have made the first); a channel or webhook made here starts it at once.
    if (await work()) {
      startWorker()
      return
    }
    waiting = setInterval(() => {
      void work().then(wanted => { if (wanted) startWorker() })
    }, SCAN_TICK_MS)
    waiting.unref()
  }

  // The queue is made ready as soon as the migrations are applied, while the
  // rest of the app is registered; the app is ready once it is. An app built
  // without migrations touches the database only when it is made ready.
  let begun = false
  const started = fastify.migrated.then(start)
  started.catch(() => {})
  fastify.addHook('onReady', async () => { await started })

  fastify.addHook('onClose', async () => {
    closing = true
    // A start under way ends first; one not begun never will.
    if (begun) await started.catch(() => {})
    clearInterval(waiting)
    clearInterval(ticking)
    await runner?.stop()
  })
}, { name: 'jobs', dependencies: ['db', 'config'] })
