import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { errorResponses, operations } from '../../lib/schemas'
import { replaceSettings } from '../../domain/reminders/settings'
import { readNotificationSettings } from '../../sql/notifications'
import { MAX_CHANNELS, PutNotificationsBody } from './schemas'

const tags = ['notifications']
const operation = operations(tags)

const REMINDERS = 'Reminders go to each owner and member (not viewers) of a family, on every channel they set: a vaccine\'s nextDueDate reached ' +
  '(the latest dose of each vaccine, as the due list reads it) and a visit tomorrow (from the day before; on its day when the day before was missed), ' +
  '"today" and "tomorrow" in the user\'s time zone (UTC without quiet hours). Each reminder leaves once per user, channel and item ' +
  '(an item is one nextDueDate of one dose, one visit on one date: a date that moves is a new item), within two minutes of becoming due or of a channel being set, ' +
  'outside the quiet hours: one due during them leaves when they end. It tells the child\'s first name, the item and its date, nothing more. ' +
  'A reminder that does not arrive is tried again after REMINDER_RETRY_MS, then twice as long each time, REMINDER_ATTEMPTS attempts in all, then given up; ' +
  'the channel shows its last failure and reason.'

/** The signed-in user's reminders: the channels they go to and the quiet hours. */
const notifications: FastifyPluginAsyncTypebox = async function (fastify) {
  const { config } = fastify
  // Each PUT may send messages to addresses the caller chooses: limited per account like the other checks.
  const changesByAccount = fastify.authLimit('notification-settings', request => String(request.user.id))
  // The channels hold addresses and credentials (an ntfy URL's password, a push subscription's keys): no personal access token reaches them.
  const personalTokens = 'refused' as const

  fastify.get('/api/me/notifications', {
    config: { personalTokens },
    schema: operation('getMyNotifications', 'Where the user\'s reminders go, and the quiet hours', {
      description: `${REMINDERS} Personal access tokens are refused (403): the channels hold addresses and credentials.`,
      response: { 200: Type.Ref('NotificationSettings'), ...errorResponses(401, 403) }
    })
  }, async request => await readNotificationSettings(request.db, request.user.id))

  fastify.put('/api/me/notifications', {
    // It waits on more than the database (the network): its key is not held in a transaction.
    config: { idempotency: 'apart', personalTokens },
    preHandler: changesByAccount,
    schema: operation('putMyNotifications', 'Replace where the user\'s reminders go, and the quiet hours', {
      description: 'Each user for themselves. The settings are replaced whole: a channel left out goes, with its reminders still to send. ' +
        'A channel the user already has (the same e-mail address in any case, URL or subscription) is kept as it is, with its history; ' +
        'every other one is verified by a test message sent at once, ignoring quiet hours: when one does not take it, nothing is saved and the answer is ' +
        '422 CHANNEL_UNREACHABLE with the reason (details: channel, its index in the list; type; reason). ' +
        `At most ${MAX_CHANNELS} channels, each once (400 otherwise); quiet hours are HH:MM to HH:MM in an IANA time zone, across midnight when to comes first, ` +
        'and from must differ from to. An ntfy URL or a push subscription\'s endpoint that the outbound rule refuses (see their fields), written so or resolved so now, is a 400; ' +
        'a name is resolved and judged again at each send. A reason never holds the body of a failing answer, only its status, ' +
        'and a channel that did not answer "could not be reached", whatever the cause. ' +
        'A subscription must be the browser\'s PushSubscription JSON: an http or https endpoint, p256dh an uncompressed P-256 point, auth 16 bytes. ' +
        'Every request counts against AUTH_RATE_LIMIT_MAX a window per account (429 beyond). Personal access tokens are refused (403). Answers the settings as GET shows them. ' + REMINDERS,
      body: PutNotificationsBody,
      response: { 200: Type.Ref('NotificationSettings'), ...errorResponses(400, 401, 403, 409, 422, 429) }
    })
  }, async request => {
    const { settings, added } = await replaceSettings(request.db, config, request.user.id, request.body)
    if (added) await request.afterCommit(async () => await fastify.reminders.scanSoon())
    return settings
  })
}

export default notifications
