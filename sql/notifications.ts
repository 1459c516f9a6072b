import type { Db } from '../db/client'
import type { Channel } from '../lib/channels'

export interface QuietHours {
  from: string
  to: string
  timeZone: string
}

/** A stored channel as GET /api/me/notifications shows it. */
export type ChannelState = Channel & {
  id: number
  verifiedAt: Date
  lastDeliveryAt: Date | null
  lastFailure: { at: Date, reason: string, gaveUp: boolean } | null
}

export interface NotificationSettings {
  channels: ChannelState[]
  quietHours: QuietHours | null
}

/** A channel to store: the ones kept carry their row's id. */
export interface ChannelToStore {
  channel: Channel
  key: string
}

interface ChannelRow {
  id: number
  type: Channel['type']
  target: Record<string, unknown>
  verifiedAt: Date
  lastDeliveryAt: Date | null
  lastFailureAt: Date | null
  lastFailureReason: string | null
  lastFailureGaveUp: boolean
}

/** What a channel's target column holds: its fields but the type. */
function target (channel: Channel): Record<string, unknown> {
  const { type: _type, ...rest } = channel
  return rest
}

export async function readNotificationSettings (db: Db, userId: number): Promise<NotificationSettings> {
  const [settings] = await db<Array<{ from: string | null, to: string | null, timeZone: string | null }>>`
    select to_char(quiet_from, 'HH24:MI') as "from", to_char(quiet_to, 'HH24:MI') as "to", time_zone as "timeZone"
    from notification_settings where user_id = ${userId}
  `
  const rows = await db<ChannelRow[]>`
    select
      id, type, target, verified_at as "verifiedAt", last_delivery_at as "lastDeliveryAt",
      last_failure_at as "lastFailureAt", last_failure_reason as "lastFailureReason", last_failure_gave_up as "lastFailureGaveUp"
    from notification_channels
    where user_id = ${userId}
    order by position, id
  `
  const channels = rows.map(row => ({
    id: row.id,
    type: row.type,
    ...row.target,
    verifiedAt: row.verifiedAt,
    lastDeliveryAt: row.lastDeliveryAt,
    lastFailure: row.lastFailureAt === null
      ? null
      : { at: row.lastFailureAt, reason: row.lastFailureReason ?? '', gaveUp: row.lastFailureGaveUp }
  }) as ChannelState)
  const quiet = settings?.from == null ? null : { from: settings.from, to: settings.to as string, timeZone: settings.timeZone as string }
  return { channels, quietHours: quiet }
}

/**
 * Locks the user's row for the rest of the transaction, so that two
 * replacements of one user's settings run one after the other, and answers
 * the keys of the channels the user has.
 */
export async function lockChannelKeys (db: Db, userId: number): Promise<Set<string>> {
  await db`select id from users where id = ${userId} for no key update`
  const rows = await db<Array<{ key: string }>>`select target_key as key from notification_channels where user_id = ${userId}`
  return new Set(rows.map(row => row.key))
}

export async function channelKeys (db: Db, userId: number): Promise<Set<string>> {
  const rows = await db<Array<{ key: string }>>`select target_key as key from notification_channels where user_id = ${userId}`
  return new Set(rows.map(row => row.key))
}

/** Whether PostgreSQL knows a time zone by that name. */
export async function timeZoneKnown (db: Db, name: string): Promise<boolean> {
  const [row] = await db<Array<{ known: boolean }>>`select exists (select 1 from pg_timezone_names where name = ${name}) as known`
  return row.known
}

/**
 * Replaces a user's settings: the channels not listed go, with their
 * reminders; a listed channel that exists keeps its row, history and
 * reminders (its target takes the new spelling); a new one is stored as
 * verified and delivered now, its test message having arrived.
 */
export async function replaceNotificationSettings (
  db: Db, userId: number, channels: ChannelToStore[], quietHours: QuietHours | null
): Promise<void> {
  const keys = channels.map(item => item.key)
  await db`delete from notification_channels where user_id = ${userId} and not (target_key = any(${keys}::text[]))`
  for (const [position, { channel, key }] of channels.entries()) {
    await db`
      insert into notification_channels (user_id, position, type, target, target_key, verified_at, last_delivery_at)
      values (${userId}, ${position}, ${channel.type}, ${db.json(target(channel) as never)}, ${key}, now(), now())
      on conflict (user_id, target_key) do update set position = excluded.position, target = excluded.target
    `
  }
  if (quietHours === null) {
    await db`
      insert into notification_settings (user_id) values (${userId})
      on conflict (user_id) do update set quiet_from = null, quiet_to = null, time_zone = null, updated_at = now()
    `
  } else {
    await db`
      insert into notification_settings (user_id, quiet_from, quiet_to, time_zone)
      values (${userId}, ${quietHours.from}::time, ${quietHours.to}::time, ${quietHours.timeZone})
      on conflict (user_id) do update set
        quiet_from = excluded.quiet_from, quiet_to = excluded.quiet_to, time_zone = excluded.time_zone, updated_at = now()
    `
  }
}
