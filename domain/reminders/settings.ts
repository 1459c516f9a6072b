// A user's notification settings replaced: the new and changed channels
// verified by a test message, sent at once and before anything is saved.
import type { Sql } from '../../db/client'
import { channelKey, sendTo, type Channel } from '../../outbound/channels'
import type { Config } from '../../io/config'
import { errors, invalidRequest, withDetails, type Issue } from '../../lib/errors'
import { destinationIssue, outboundRule } from '../../outbound/address'
import { checkSubscription } from '../../outbound/push'
import { testMessage } from '../../lib/reminders/message'
import { zoneInIntl, type Language } from '../../lib/preferences'
import { preferencesOf } from '../../sql/users'
import { requeueOpen } from '../../sql/reminder-deliveries'
import {
  channelKeys, lockChannelKeys, readNotificationSettings, replaceNotificationSettings, timeZoneKnown,
  type NotificationSettings, type QuietHours
} from '../../sql/notifications'

export interface SettingsInput {
  channels: Channel[]
  quietHours?: QuietHours | null
}

/** The URL a channel sends to, and the path of its field; none for e-mail. */
function destination (channel: Channel, index: number): { url: string, path: string } | null {
  if (channel.type === 'ntfy') return { url: channel.url, path: `/body/channels/${index}/url` }
  if (channel.type === 'webpush') return { url: channel.subscription.endpoint, path: `/body/channels/${index}/subscription/endpoint` }
  return null
}

/**
 * The rules a body's schema cannot say: each channel once, a usable
 * subscription, no ntfy topic or push endpoint the outbound rule refuses
 * (written so or resolved so now), a known time zone, quiet hours that last.
 */
async function check (sql: Sql, config: Config, input: SettingsInput): Promise<void> {
  const issues: Issue[] = []
  const seen = new Map<string, number>()
  const destinations: Array<{ url: string, path: string }> = []
  for (const [index, channel] of input.channels.entries()) {
    const key = channelKey(channel)
    if (seen.has(key)) issues.push({ path: `/body/channels/${index}`, message: `must not repeat channel ${seen.get(key)}` })
    seen.set(key, index)
    const problem = channel.type === 'webpush' ? checkSubscription(channel.subscription) : null
    if (problem !== null) issues.push({ path: `/body/channels/${index}/subscription`, message: problem })
    const target = destination(channel, index)
    if (problem === null && target !== null) destinations.push(target)
  }
  const rule = outboundRule(config.webhookAllowPrivate, config.host)
  for (const issue of await Promise.all(destinations.map(async ({ url, path }) => await destinationIssue(url, rule, path)))) {
    if (issue !== null) issues.push(issue)
  }
  const quiet = input.quietHours
  if (quiet != null) {
    if (quiet.from === quiet.to) issues.push({ path: '/body/quietHours/to', message: 'must differ from from' })
    if (!zoneInIntl(quiet.timeZone) || !(await timeZoneKnown(sql, quiet.timeZone))) {
      issues.push({ path: '/body/quietHours/timeZone', message: 'must be an IANA time zone, e.g. Europe/Berlin' })
    }
  }
  if (issues.length > 0) throw invalidRequest(issues)
}

/** Sends the test message, in the user's language, to each channel, all at once; the first failure is a 422 CHANNEL_UNREACHABLE with its reason. */
async function verify (config: Config, language: Language, channels: Array<{ index: number, channel: Channel }>): Promise<void> {
  const message = testMessage(language)
  const results = await Promise.all(channels.map(async ({ index, channel }) => {
    try {
      await sendTo(channel, message, { config, timeoutMs: config.reminders.sendTimeoutMs })
      return null
    } catch (error) {
      return { index, reason: (error as Error).message }
    }
  }))
  const failed = results.find(result => result !== null)
  if (failed != null) {
    throw withDetails(new errors.channelUnreachable(`Channel ${failed.index} did not take the test message: ${failed.reason}`), {
      channel: failed.index, type: channels.find(item => item.index === failed.index)?.channel.type, reason: failed.reason
    })
  }
}

/**
 * Replaces a user's settings and answers them as they now are. Channels that
 * the user already has are kept as they are; the others get a test message,
 * ignoring quiet hours, and one that does not take it refuses the whole
 * request, saving nothing. Reminders put off by quiet hours are looked at
 * again at once, since the quiet hours may have changed.
 */
export async function replaceSettings (sql: Sql, config: Config, userId: number, input: SettingsInput): Promise<{ settings: NotificationSettings, added: boolean }> {
  await check(sql, config, input)
  const channels = input.channels.map((channel, index) => ({ index, channel, key: channelKey(channel) }))
  const before = await channelKeys(sql, userId)
  const fresh = channels.filter(item => !before.has(item.key))
  if (fresh.length > 0) {
    const language = (await preferencesOf(sql, userId))?.language ?? 'en'
    await verify(config, language, fresh)
  }
  const tested = new Set(fresh.map(item => item.key))
  await sql.begin(async tx => {
    const now = await lockChannelKeys(tx, userId)
    if (channels.some(item => !now.has(item.key) && !tested.has(item.key))) {
      throw new errors.conflict('The notification settings changed meanwhile: read them and try again')
    }
    await replaceNotificationSettings(tx, userId, channels, input.quietHours ?? null)
    await requeueOpen(tx, { userId, mode: 'replace' })
  })
  return { settings: await readNotificationSettings(sql, userId), added: fresh.length > 0 }
}
