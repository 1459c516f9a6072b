import type { PendingQuery, Row } from 'postgres'
import type { Db } from '../db/client'
import { QUEUE_SCHEMA, TASKS } from '../db/queue'
import type { Position } from '../kinds/changes'
import { isOwner, lockOwner } from './families'
import { readPage, type Page, type PageRequest } from './list'
import { addJob } from './queue'

/** A webhook as its owner sees it, with the position of the last change it delivered. */
export interface WebhookRow {
  id: number
  url: string
  events: string[] | null
  /** Its maker; null once that account is deleted. */
  createdBy: { id: number, name: string } | null
  createdAt: Date
  epoch: string
  xid: number
  seq: number
  lastDeliveryAt: Date | null
  failures: number
  failingSince: Date | null
  lastError: string | null
  /** 2xx answers in a row slower than WEBHOOK_SLOW_MS. */
  slowAnswers: number
  /** While failing or slowed: when the next attempt may be made. */
  nextAttemptAt: Date | null
  disabledAt: Date | null
  disabledReason: string | null
}

/** What a delivery needs of its webhook. */
export interface WebhookTarget extends WebhookRow {
  familyId: number
  secret: string
  /** Whether a failed attempt's retry is still to come: nothing is sent before it. */
  waiting: boolean
}

export interface DeliveryAttempt {
  id: number
  at: Date
  cursor: string
  statusCode: number | null
  error: string | null
  durationMs: number
  response: string | null
}

/** The attempts of each webhook the log keeps: older ones are dropped. */
export const KEPT_ATTEMPTS = 1000

const columns = (db: Db) => db`
  id, url, events,
  (select json_build_object('id', u.id, 'name', u.name) from users u where u.id = webhooks.created_by) as "createdBy",
  created_at as "createdAt", epoch, after_xid::text::int8 as xid, after_seq as seq,
  last_delivery_at as "lastDeliveryAt", failures, failing_since as "failingSince", last_error as "lastError",
  slow_answers as "slowAnswers", next_attempt_at as "nextAttemptAt", disabled_at as "disabledAt", disabled_reason as "disabledReason"
`

/** The flag that marks each job of a webhook's deliveries, to find its waiting ones. */
const jobFlag = (webhookId: number): string => `webhook:${webhookId}`

/**
 * Adds the next run of each webhook `which` selects (a condition on `w`),
 * under one key a webhook (`replace` moves a waiting one, `preserve_run_at`
 * keeps its time), in its maker's queue, as the change log's trigger adds
 * the jobs of new changes: one maker's webhooks run one at a time. A
 * webhook whose maker's account was deleted gets none.
 */
async function queueRuns (db: Db, which: PendingQuery<Row[]>, runAt: PendingQuery<Row[]>, mode: 'replace' | 'preserve_run_at'): Promise<number> {
  const rows = await db`
    select ${addJob(db, TASKS.webhook, db`json_build_object('webhookId', w.id)`, {
      queueName: db`'webhooks-by:' || w.created_by`,
      jobKey: db`'webhook:' || w.id || ':next'`,
      jobKeyMode: mode,
      runAt,
      maxAttempts: 25,
      flags: db`array['webhook:' || w.id]`
    })}
    from webhooks w
    where w.created_by is not null and ${which}
  `
  return rows.length
}

/** A webhook's next run, as deliveries themselves and the routes ask for it: now, or at `runAt`. */
export async function queueWebhook (db: Db, webhookId: number, runAt: Date | null, mode: 'replace' | 'preserve_run_at'): Promise<void> {
  await queueRuns(db, db`w.id = ${webhookId}`, runAt === null ? db`null::timestamptz` : db`${runAt}::timestamptz`, mode)
}

/** Drops a webhook's waiting jobs: a run in work finds the webhook as it is then. */
async function dropWaitingJobs (db: Db, webhookId: number): Promise<void> {
  await db`
    select ${db(QUEUE_SCHEMA)}.complete_jobs(array(
      select id from ${db(QUEUE_SCHEMA)}.jobs
      where task_identifier = ${TASKS.webhook} and flags ? ${jobFlag(webhookId)} and locked_at is null
    ))
  `
}

/**
 * A webhook's next run, behind the jobs already waiting in its maker's
 * queue: its own waiting jobs go (that run delivers all they would), so
 * the maker's other webhooks get their turn first.
 */
export async function queueWebhookLast (db: Db, webhookId: number): Promise<void> {
  await dropWaitingJobs(db, webhookId)
  await queueWebhook(db, webhookId, null, 'replace')
}

/** A family's webhooks, counted while no other one is being made for the family. */
export async function countWebhooksLocked (db: Db, familyId: number): Promise<number> {
  await db`select 1 from families where id = ${familyId} for no key update`
  const [row] = await db<{ count: number }[]>`select count(*)::int as count from webhooks where family_id = ${familyId}`
  return row.count
}

/**
 * A new webhook of a family, delivering the changes after the last one the
 * family has: those of transactions that commit from now on.
 */
export async function createWebhook (
  db: Db, hook: { familyId: number, url: string, secret: string, events: string[] | null, createdBy: number }
): Promise<WebhookRow | undefined> {
  const [row] = await db<WebhookRow[]>`
    insert into webhooks (family_id, url, secret, events, created_by, epoch, after_xid, after_seq)
    select ${hook.familyId}, ${hook.url}, ${hook.secret}, ${hook.events}::text[], ${hook.createdBy}, k.epoch,
      coalesce(l.xid, '0'::xid8), coalesce(l.seq, 0)
    from family_clocks k
    left join lateral (
      select xid, seq from changes where family_id = k.family_id order by xid desc, seq desc limit 1
    ) l on true
    where k.family_id = ${hook.familyId}
    returning ${columns(db)}
  `
  return row
}

export async function listWebhooks (db: Db, familyId: number, page: PageRequest): Promise<Page<WebhookRow>> {
  return await readPage<WebhookRow>(db, { ...page, select: columns(db), from: db`from webhooks where family_id = ${familyId}`, order: db`order by id` })
}

export async function findWebhook (db: Db, familyId: number, webhookId: number): Promise<WebhookRow | undefined> {
  const [row] = await db<WebhookRow[]>`select ${columns(db)} from webhooks where id = ${webhookId} and family_id = ${familyId}`
  return row
}

/** Deletes a webhook, its log and its waiting jobs; a delivery in work finds it gone. */
export async function deleteWebhook (db: Db, familyId: number, webhookId: number): Promise<boolean> {
  const rows = await db`delete from webhooks where id = ${webhookId} and family_id = ${familyId} returning id`
  if (rows.length === 0) return false
  await dropWaitingJobs(db, webhookId)
  return true
}

/**
 * Queues a run of every enabled webhook, unless one waits, at its next
 * attempt's time: at start, for the jobs a lost queue or a restore did not make.
 */
export async function queueEveryWebhook (db: Db): Promise<number> {
  return await queueRuns(db, db`w.disabled_at is null`, db`w.next_attempt_at`, 'preserve_run_at')
}

/**
 * Whether a webhook's maker is still an owner of its family, with an enabled
 * account, and stays so until the transaction ends; undefined when the
 * family has no such webhook.
 */
export async function lockWebhookMaker (db: Db, familyId: number, webhookId: number): Promise<boolean | undefined> {
  const [row] = await db<{ maker: number | null }[]>`select created_by as maker from webhooks where id = ${webhookId} and family_id = ${familyId}`
  if (row === undefined) return undefined
  return row.maker !== null && await lockOwner(db, familyId, row.maker)
}

/** Enables a webhook again from where it stopped, its failures forgotten, and queues its deliveries. */
export async function enableWebhook (db: Db, familyId: number, webhookId: number): Promise<WebhookRow | undefined> {
  const [row] = await db<WebhookRow[]>`
    update webhooks set disabled_at = null, disabled_reason = null, failures = 0, failing_since = null, next_attempt_at = null, slow_answers = 0
    where id = ${webhookId} and family_id = ${familyId}
    returning ${columns(db)}
  `
  if (row !== undefined) await queueWebhook(db, webhookId, null, 'replace')
  return row
}

export async function listDeliveries (db: Db, webhookId: number, page: PageRequest): Promise<Page<DeliveryAttempt>> {
  return await readPage<DeliveryAttempt>(db, {
    ...page,
    select: db`
      id, attempted_at as at, change_cursor as cursor, status_code as "statusCode", error, duration_ms as "durationMs",
      response_excerpt as response
    `,
    from: db`from webhook_deliveries where webhook_id = ${webhookId}`,
    order: db`order by id desc`
  })
}

/** A webhook `webhooks` delivers only while its maker is an owner of its family with an enabled account. */
function makerIsOwner (db: Db) {
  return isOwner(db, db`webhooks.family_id`, db`webhooks.created_by`)
}

/** The webhook a delivery job is for; undefined when it was deleted or its maker is no longer an owner of its family. */
export async function webhookTarget (db: Db, webhookId: number): Promise<WebhookTarget | undefined> {
  const [row] = await db<WebhookTarget[]>`
    select ${columns(db)}, family_id as "familyId", secret, coalesce(next_attempt_at > now(), false) as waiting
    from webhooks where id = ${webhookId} and ${makerIsOwner(db)}
  `
  return row
}

/** Whether a webhook may send its next change: it is there, enabled, and its maker an owner of its family. */
export async function webhookDelivers (db: Db, webhookId: number): Promise<boolean> {
  const rows = await db`select 1 from webhooks where id = ${webhookId} and disabled_at is null and ${makerIsOwner(db)}`
  return rows.length > 0
}

/**
 * Moves a webhook past a change: delivered, with a fast or a slow answer, or
 * not of a kind it sends (null). Answers the slow answers in a row and the
 * time; undefined when the webhook is gone.
 */
export async function moveWebhook (
  db: Db, webhookId: number, to: Position & { epoch: string }, answer: 'fast' | 'slow' | null
): Promise<{ slowAnswers: number, now: Date } | undefined> {
  const [row] = await db<Array<{ slowAnswers: number, now: Date }>>`
    update webhooks set
      epoch = ${to.epoch}, after_xid = ${String(to.xid)}::xid8, after_seq = ${to.seq}
      ${answer === null
        ? db``
        : db`, last_delivery_at = now(), failures = 0, failing_since = null, last_error = null, next_attempt_at = null,
          slow_answers = ${answer === 'slow' ? db`slow_answers + 1` : db`0`}`}
    where id = ${webhookId}
    returning slow_answers as "slowAnswers", now() as now
  `
  return row
}

/** Records a failed attempt on its webhook: the failures in a row, and when they began; undefined when the webhook is gone. */
export async function webhookFailed (db: Db, webhookId: number, reason: string): Promise<{ failures: number, failingSince: Date, now: Date } | undefined> {
  const [row] = await db<{ failures: number, failingSince: Date, now: Date }[]>`
    update webhooks set failures = failures + 1, failing_since = coalesce(failing_since, now()), last_error = ${reason}
    where id = ${webhookId}
    returning failures, failing_since as "failingSince", now() as now
  `
  return row
}

export async function disableWebhook (db: Db, webhookId: number, reason: string): Promise<void> {
  await db`update webhooks set disabled_at = now(), disabled_reason = ${reason}, next_attempt_at = null where id = ${webhookId}`
}

/** A failed or slowed webhook's next attempt: nothing is sent before, and its job waits until then. */
export async function retryWebhookAt (db: Db, webhookId: number, at: Date): Promise<void> {
  await db`update webhooks set next_attempt_at = ${at} where id = ${webhookId}`
  await queueWebhook(db, webhookId, at, 'replace')
}

export async function logAttempt (
  db: Db, webhookId: number, attempt: { cursor: string, statusCode: number | null, error: string | null, durationMs: number, response: string | null }
): Promise<void> {
  await db`
    insert into webhook_deliveries (webhook_id, change_cursor, status_code, error, duration_ms, response_excerpt)
    values (${webhookId}, ${attempt.cursor}, ${attempt.statusCode}, ${attempt.error}, ${attempt.durationMs}, ${attempt.response})
  `
}

/** Drops a webhook's attempts beyond the latest KEPT_ATTEMPTS. */
export async function pruneAttempts (db: Db, webhookId: number): Promise<void> {
  await db`
    delete from webhook_deliveries
    where webhook_id = ${webhookId} and id <= (
      select id from webhook_deliveries where webhook_id = ${webhookId} order by id desc offset ${KEPT_ATTEMPTS} limit 1
    )
  `
}
