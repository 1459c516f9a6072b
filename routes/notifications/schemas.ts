import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { Id, Nullable, StrictObject, Timestamp } from '../../lib/schemas'
import { Email } from '../../lib/account-schemas'
import { HttpUrl, OUTBOUND_RULE } from '../../lib/outbound-url'

/** How many channels a user may have. */
export const MAX_CHANNELS = 10

const EmailChannel = StrictObject({
  type: Type.Literal('email'),
  address: { ...Email, description: 'Reminders arrive as e-mail at this address' }
})

const NtfyChannel = StrictObject({
  type: Type.Literal('ntfy'),
  url: HttpUrl('The ntfy topic\'s URL (http or https), e.g. https://ntfy.sh/my-secret-topic; a user name and password in it are sent as Basic authentication. ' + OUTBOUND_RULE)
})

const Subscription = StrictObject({
  endpoint: HttpUrl('The push service\'s URL for this browser. ' + OUTBOUND_RULE),
  expirationTime: Type.Optional(Nullable(Type.Number())),
  keys: StrictObject({
    p256dh: Type.String({ pattern: '^[A-Za-z0-9_-]{87}=?$', description: 'The browser\'s P-256 public key, base64url (65 bytes)' }),
    auth: Type.String({ pattern: '^[A-Za-z0-9_-]{22}(==)?$', description: 'The browser\'s authentication secret, base64url (16 bytes)' })
  })
}, { description: 'A browser\'s PushSubscription, as its toJSON() gives it' })

const WebPushChannel = StrictObject({
  type: Type.Literal('webpush'),
  subscription: Subscription
})

/** One channel of a PUT: the branch is chosen by `type`. */
const ChannelBody = Type.Unsafe<Static<typeof EmailChannel> | Static<typeof NtfyChannel> | Static<typeof WebPushChannel>>({
  oneOf: [EmailChannel, NtfyChannel, WebPushChannel],
  discriminator: { propertyName: 'type' }
})

const QuietHours = StrictObject({
  from: Type.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$', description: 'HH:MM, when the quiet hours begin', examples: ['22:00'] }),
  to: Type.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$', description: 'HH:MM, when they end; before `from` when they span midnight', examples: ['07:00'] }),
  timeZone: Type.String({ minLength: 1, maxLength: 64, description: 'An IANA time zone, e.g. Europe/Berlin: the zone of the quiet hours, and of "today" and "tomorrow" in reminders', examples: ['Europe/Berlin'] })
})

export const PutNotificationsBody = StrictObject({
  channels: Type.Array(ChannelBody, { maxItems: MAX_CHANNELS, description: `Every channel of the user, at most ${MAX_CHANNELS}, each once; an empty list turns reminders off` }),
  quietHours: Type.Optional(Nullable(QuietHours))
})

export type PutNotifications = Static<typeof PutNotificationsBody>

const ChannelState = {
  id: Id,
  verifiedAt: { ...Timestamp, description: 'When its test message arrived' },
  lastDeliveryAt: { ...Nullable(Timestamp), description: 'When a message last arrived: a reminder, or the test message' },
  lastFailure: { ...Nullable(Type.Object({
    at: Timestamp,
    reason: Type.String(),
    gaveUp: Type.Boolean({ description: 'true when that reminder will not be tried again; false while it is being retried' })
  })), description: 'The last reminder that did not arrive, and why; null when none failed' }
}

function stated (channel: { properties: Record<string, TSchema> }) {
  return Type.Object({ ...channel.properties, ...ChannelState })
}

export const NotificationSettings = Type.Object({
  channels: Type.Array(Type.Union([stated(EmailChannel), stated(NtfyChannel), stated(WebPushChannel)])),
  quietHours: Nullable(QuietHours)
}, { $id: 'NotificationSettings', title: 'NotificationSettings' })
