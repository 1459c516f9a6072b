// The deliveries of one webhook: the family's changes after the last one it
// delivered, POSTed one at a time in the feed's order, each acknowledged
// (the webhook moved past it) only once the receiver answered 2xx.
import { performance } from 'node:perf_hooks'
import type { Sql } from '../../db/client'
import { presentChange, type Position, type StoredChange } from '../../kinds/changes'
import type { Config } from '../../io/config'
import { PostError, postOnce } from '../../outbound/post'
import { signedHeaders } from '../../lib/webhooks/sign'
import { changesAfter, changesHeldBack, familyClock, familyPositions } from '../../sql/changes'
import {
  disableWebhook, logAttempt, moveWebhook, pruneAttempts, queueWebhook, queueWebhookLast, retryWebhookAt, webhookDelivers, webhookFailed, webhookTarget, type WebhookTarget
} from '../../sql/webhooks'

/** Changes one job delivers at most; then the webhook's next job goes on, behind the jobs waiting, so that other jobs get their turn. */
export const BATCH = 100
/** How soon a webhook looks again when its family's next changes wait for an older transaction to end, in milliseconds. */
export const HELD_BACK_MS = 250

export type Outcome = 'none' | 'delivered' | 'more' | 'waiting' | 'retrying' | 'slowed' | 'disabled'

/** The wait before the attempt after `failures` failures in a row: WEBHOOK_RETRY_MS, times WEBHOOK_RETRY_GROWTH each time, at most WEBHOOK_RETRY_MAX_MS. */
export function retryDelay (config: Config, failures: number): number {
  const { retryMs, retryGrowth, retryMaxMs } = config.webhooks
  return Math.min(retryMs * retryGrowth ** Math.min(failures - 1, 60), retryMaxMs)
}

/** A span of time as people say it: 24 h, 90 min, 1.5 s. */
function duration (ms: number): string {
  const round = (value: number): number => Math.round(value * 10) / 10
  if (ms >= 3_600_000) return `${round(ms / 3_600_000)} h`
  if (ms >= 60_000) return `${round(ms / 60_000)} min`
  return `${round(ms / 1000)} s`
}

interface Attempt {
  cursor: string
  statusCode: number | null
  error: string | null
  durationMs: number
  response: string | null
}

/** One POST of one change; never throws for the receiver's sake. */
async function attempt (config: Config, hook: WebhookTarget, change: StoredChange, epoch: string): Promise<Attempt> {
  const presented = presentChange(change, epoch, null)
  const body = Buffer.from(JSON.stringify(presented), 'utf8')
  const started = performance.now()
  const duration = () => Math.round(performance.now() - started)
  try {
    const { status } = await postOnce(hook.url, {
      headers: signedHeaders(hook.secret, presented.cursor, body, new Date()),
      body,
      timeoutMs: config.webhooks.timeoutMs,
      allowPrivate: config.webhookAllowPrivate,
      host: config.host,
      what: 'the webhook'
    })
    const error = status >= 200 && status < 300
      ? null
      : status >= 300 && status < 400 ? `the webhook answered ${status}: redirects are not followed` : `the webhook answered ${status}`
    return { cursor: presented.cursor, statusCode: status, error, durationMs: duration(), response: null }
  } catch (error) {
    if (!(error instanceof PostError)) throw error
    return { cursor: presented.cursor, statusCode: null, error: error.message, durationMs: duration(), response: null }
  }
}

/** Records a failure: a retry after a growing wait, or, once it has failed for WEBHOOK_GIVE_UP_MS, the webhook disabled. */
async function failed (sql: Sql, config: Config, hook: WebhookTarget, result: Attempt): Promise<Outcome> {
  return await sql.begin(async tx => {
    const reason = result.error ?? 'failed'
    const state = await webhookFailed(tx, hook.id, reason)
    // Deleted while the attempt was made.
    if (state === undefined) return 'none'
    const { failures, failingSince, now } = state
    await logAttempt(tx, hook.id, result)
    const giveUpAt = failingSince.getTime() + config.webhooks.giveUpMs
    if (now.getTime() >= giveUpAt) {
      await disableWebhook(tx, hook.id, `Every delivery failed for ${duration(config.webhooks.giveUpMs)}, ${failures} attempts; the last one: ${reason}`)
      return 'disabled'
    }
    await retryWebhookAt(tx, hook.id, new Date(Math.min(now.getTime() + retryDelay(config, failures), giveUpAt)))
    return 'retrying'
  })
}

/**
 * Records a delivery: the webhook past the change, and the attempt logged.
 * An answer slower than WEBHOOK_SLOW_MS also delays the next attempt as a
 * failure's retry would, longer with each slow answer in a row; a fast one
 * ends the slowing. 'none' when the webhook was deleted meanwhile.
 */
async function delivered (sql: Sql, config: Config, hook: WebhookTarget, to: Position & { epoch: string }, result: Attempt): Promise<'delivered' | 'slowed' | 'none'> {
  const slow = result.durationMs > config.webhooks.slowMs
  return await sql.begin(async tx => {
    const moved = await moveWebhook(tx, hook.id, to, slow ? 'slow' : 'fast')
    if (moved === undefined) return 'none'
    await logAttempt(tx, hook.id, result)
    if (!slow) return 'delivered'
    await retryWebhookAt(tx, hook.id, new Date(moved.now.getTime() + retryDelay(config, moved.slowAnswers)))
    return 'slowed'
  })
}

/**
 * Delivers a webhook's changes, at most BATCH of them: nothing when it was
 * deleted, is disabled, or waits for a retry (whose own job comes then:
 * the jobs of new changes meanwhile find nothing to do). A change of a kind the webhook does not send is
 * passed over. The first failure stops the run and queues a retry, and
 * so does the first slow answer, though its change is delivered. No
 * attempt starts once WEBHOOK_JOB_BUDGET_MS have passed since the first:
 * the rest goes to the webhook's next run, behind the jobs waiting. When
 * the worker is stopping, the run ends after the attempt in work and leaves
 * the rest to the next run, on whichever instance.
 */
export async function deliverWebhook (sql: Sql, config: Config, webhookId: number, stopping: () => boolean = () => false): Promise<Outcome> {
  const hook = await webhookTarget(sql, webhookId)
  if (hook === undefined || hook.disabledAt !== null || hook.waiting) return 'none'
  const clock = await familyClock(sql, hook.familyId)
  if (clock === undefined) return 'none'
  let from: Position = { xid: hook.xid, seq: hook.seq }
  if (clock.epoch !== hook.epoch) {
    // The family's data was restored: the webhook goes on from the restored data's last change.
    const [position] = await familyPositions(sql, [hook.familyId])
    from = { xid: position?.xid ?? 0, seq: position?.seq ?? 0 }
    await moveWebhook(sql, hook.id, { ...from, epoch: clock.epoch }, null)
  }
  const batch = await changesAfter(sql, hook.familyId, from, BATCH)
  if (batch.length === 0) {
    if (!(await changesHeldBack(sql, hook.familyId))) return 'none'
    await queueWebhook(sql, hook.id, new Date(Date.now() + HELD_BACK_MS), 'preserve_run_at')
    return 'waiting'
  }
  const began = performance.now()
  let attempted = false
  let cut = false
  let passed: StoredChange | null = null
  for (const change of batch) {
    if (stopping() || (attempted && performance.now() - began >= config.webhooks.jobBudgetMs)) {
      cut = true
      break
    }
    if (hook.events !== null && !hook.events.includes(change.kind)) {
      passed = change
      continue
    }
    // Stopped meanwhile: its maker is no longer an owner, or it was disabled or deleted.
    if (!(await webhookDelivers(sql, hook.id))) return 'none'
    attempted = true
    const result = await attempt(config, hook, change, clock.epoch)
    if (result.error !== null) {
      if (passed !== null) await moveWebhook(sql, hook.id, { ...passed, epoch: clock.epoch }, null)
      return await failed(sql, config, hook, result)
    }
    const outcome = await delivered(sql, config, hook, { ...change, epoch: clock.epoch }, result)
    // Deleted while the attempt was made.
    if (outcome === 'none') return 'none'
    passed = null
    if (outcome === 'slowed') {
      await pruneAttempts(sql, hook.id)
      return 'slowed'
    }
  }
  if (passed !== null) await moveWebhook(sql, hook.id, { ...passed, epoch: clock.epoch }, null)
  await pruneAttempts(sql, hook.id)
  if (!cut && batch.length < BATCH) return 'delivered'
  await sql.begin(async tx => { await queueWebhookLast(tx, hook.id) })
  return 'more'
}
