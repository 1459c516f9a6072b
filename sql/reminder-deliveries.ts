import type { PendingQuery, Row } from 'postgres'
import type { Db } from '../db/client'
import { TASKS } from '../db/queue'
import type { Channel, Message } from '../lib/channels'
import type { Language } from '../lib/preferences'
import { addJob, type JobOptions } from './queue'

/** A reminder to record: an item's message in one language, for every channel of the family's members in one time zone who read it. */
export interface NewReminder {
  familyId: number
  childId: number
  itemKey: string
  language: Language
  title: string
  body: string
}

/** A user's time zone for reminders: their quiet hours', or their preferences'. */
const zone = (db: Db): PendingQuery<Row[]> => db`coalesce(s.time_zone, u.time_zone)`

/** A delivery found `sending` this long ago belongs to a worker that stopped: it may be claimed again. */
const STALE_CLAIM = '10 minutes'

/**
 * The job of sending a reminder, under one key a reminder, in its user's
 * queue: one user's reminders are sent one at a time, so a slow channel
 * holds one worker at most. `id` and `userId` are SQL expressions.
 */
function sendJob (db: Db, id: PendingQuery<Row[]>, userId: PendingQuery<Row[]>, options: Pick<JobOptions, 'runAt' | 'jobKeyMode'> = {}): PendingQuery<Row[]> {
  return addJob(db, TASKS.send, db`json_build_object('deliveryId', ${id})`, {
    ...options, queueName: db`'reminders:' || ${userId}`, jobKey: db`'reminder:' || ${id}`
  })
}

/** A reminder's job, from its id: now, or at `runAt`. */
async function queueSend (db: Db, id: number, runAt: Date): Promise<void> {
  await db`
    select ${sendJob(db, db`d.id`, db`d.user_id`, { runAt: db`${runAt}::timestamptz` })}
    from reminder_deliveries d where d.id = ${id}
  `
}

/** The time zones of the users with channels, each with its today: a scan looks for each zone apart. */
export async function recipientZones (db: Db): Promise<Array<{ timeZone: string, today: string }>> {
  return db<Array<{ timeZone: string, today: string }>>`
    select zone as "timeZone", (now() at time zone zone)::date as today
    from (
      select distinct ${zone(db)} as zone
      from notification_channels c
      join users u on u.id = c.user_id and not u.disabled
      left join notification_settings s on s.user_id = c.user_id
    ) zones
  `
}

/** The families with an owner or member in the time zone who has a channel. */
export async function recipientFamilies (db: Db, timeZone: string): Promise<number[]> {
  const rows = await db<Array<{ id: number }>>`
    select distinct m.family_id as id
    from family_members m
    join users u on u.id = m.user_id and not u.disabled
    left join notification_settings s on s.user_id = m.user_id
    where m.role in ('owner', 'member') and ${zone(db)} = ${timeZone}
      and exists (select 1 from notification_channels c where c.user_id = m.user_id)
  `
  return rows.map(row => row.id)
}

/**
 * Records the reminders of items for every channel of each owner and member
 * of their families in the time zone (viewers get none), once per user,
 * channel and item: what was recorded before is left alone. Each new one gets
 * its job in the same statement, to run at once or when the user's quiet
 * hours end. Answers how many were new.
 */
export async function recordReminders (db: Db, timeZone: string, reminders: NewReminder[]): Promise<number> {
  if (reminders.length === 0) return 0
  const rows = await db`
    with items as (
      select * from json_to_recordset(${db.json(reminders as never)}::json)
        as i("familyId" integer, "childId" integer, "itemKey" text, language text, title text, body text)
    ), made as (
      insert into reminder_deliveries (user_id, channel_id, item_key, family_id, child_id, title, body)
      select m.user_id, c.id, i."itemKey", i."familyId", i."childId", i.title, i.body
      from items i
      join family_members m on m.family_id = i."familyId" and m.role in ('owner', 'member')
      join users u on u.id = m.user_id and not u.disabled and u.language = i.language
      left join notification_settings s on s.user_id = m.user_id
      join notification_channels c on c.user_id = m.user_id
      where ${zone(db)} = ${timeZone}
      on conflict (user_id, channel_id, item_key) do nothing
      returning id, user_id
    )
    select made.id, ${sendJob(db, db`made.id`, db`made.user_id`, { runAt: db`quiet_hours_end(s.quiet_from, s.quiet_to, s.time_zone, now())` })} as job
    from made
    left join notification_settings s on s.user_id = made.user_id
  `
  return rows.length
}

/**
 * Gives a job to every reminder still to send: with `replace`, the waiting
 * ones of a user not yet tried (their quiet hours may have changed) run now;
 * with `unsafe_dedupe`, those whose job is missing (a restored backup, a
 * queue emptied by hand) get one, and the others keep theirs.
 */
export async function requeueOpen (db: Db, options: { userId: number, mode: 'replace' } | { mode: 'unsafe_dedupe' }): Promise<number> {
  const rows = await db`
    select d.id, ${sendJob(db, db`d.id`, db`d.user_id`, { jobKeyMode: options.mode })} as job
    from reminder_deliveries d
    where (d.status = 'pending' or (d.status = 'sending' and d.claimed_at < now() - ${STALE_CLAIM}::interval))
      ${'userId' in options ? db`and d.user_id = ${options.userId} and d.attempts = 0` : db``}
  `
  return rows.length
}

export type Claim =
  | { kind: 'none' }
  | { kind: 'deferred', until: Date }
  | { kind: 'send', channelId: number, channel: Channel, message: Message, attempt: number }

/**
 * Takes a reminder for sending, in a transaction that holds its row: nothing
 * when it is gone, sent, given up or being sent; cancelled when its user is
 * disabled or no longer an owner or member of the child's family; put off to
 * the end of the user's quiet hours when they hold now; otherwise marked
 * `sending`, with one more attempt.
 */
export async function claimDelivery (db: Db, id: number): Promise<Claim> {
  const [row] = await db<Array<{
    claimable: boolean, eligible: boolean, quietUntil: Date | null, attempts: number, channelId: number,
    title: string, body: string, type: Channel['type'], target: Record<string, unknown>
  }>>`
    select
      d.status = 'pending' or (d.status = 'sending' and d.claimed_at < now() - ${STALE_CLAIM}::interval) as claimable,
      not u.disabled and coalesce(m.role in ('owner', 'member'), false) as eligible,
      quiet_hours_end(s.quiet_from, s.quiet_to, s.time_zone, now()) as "quietUntil",
      d.attempts, d.channel_id as "channelId", d.title, d.body, c.type, c.target
    from reminder_deliveries d
    join notification_channels c on c.id = d.channel_id
    join users u on u.id = d.user_id
    left join family_members m on m.family_id = d.family_id and m.user_id = d.user_id
    left join notification_settings s on s.user_id = d.user_id
    where d.id = ${id}
    for update of d
  `
  if (row === undefined || !row.claimable) return { kind: 'none' }
  if (!row.eligible) {
    await db`update reminder_deliveries set status = 'cancelled' where id = ${id}`
    return { kind: 'none' }
  }
  if (row.quietUntil !== null) {
    await queueSend(db, id, row.quietUntil)
    return { kind: 'deferred', until: row.quietUntil }
  }
  await db`update reminder_deliveries set status = 'sending', claimed_at = now(), attempts = attempts + 1 where id = ${id}`
  return {
    kind: 'send',
    channelId: row.channelId,
    channel: { type: row.type, ...row.target } as Channel,
    message: { title: row.title, body: row.body },
    attempt: row.attempts + 1
  }
}

/** A reminder arrived: it is sent, and its channel's last delivery is now. */
export async function deliverySent (db: Db, id: number): Promise<void> {
  await db`
    with sent as (
      update reminder_deliveries set status = 'sent', sent_at = now(), last_error = null
      where id = ${id} returning channel_id
    )
    update notification_channels set last_delivery_at = now() where id = (select channel_id from sent)
  `
}

/**
 * A reminder did not arrive: its channel shows the failure and its reason;
 * it is tried again at `retryAt` (its job added in the same transaction), or
 * given up when `retryAt` is null.
 */
export async function deliveryFailed (db: Db, id: number, reason: string, retryAt: Date | null): Promise<void> {
  await db`
    with failed as (
      update reminder_deliveries set status = ${retryAt === null ? 'given_up' : 'pending'}, last_error = ${reason}
      where id = ${id} returning channel_id
    )
    update notification_channels
    set last_failure_at = now(), last_failure_reason = ${reason}, last_failure_gave_up = ${retryAt === null}
    where id = (select channel_id from failed)
  `
  if (retryAt !== null) {
    await queueSend(db, id, retryAt)
  }
}
