// What a reminder is sent through, as the settings and the queue keep it.
// outbound/channels sends it.

/** A browser's PushSubscription as its toJSON() gives it. */
export interface PushSubscription {
  endpoint: string
  expirationTime?: number | null
  keys: { p256dh: string, auth: string }
}

/** Where a user's reminders go: one channel of the settings. */
export type Channel =
  | { type: 'email', address: string }
  | { type: 'ntfy', url: string }
  | { type: 'webpush', subscription: PushSubscription }

export type ChannelType = Channel['type']

/** What a channel is sent: a title and one short text. */
export interface Message {
  title: string
  body: string
}

/** A failure of a send, with a reason a user can read; `permanent` when trying again cannot help; the cause, for the log. */
export class SendError extends Error {
  constructor (message: string, readonly permanent = false, cause?: unknown) {
    super(message, { cause })
    this.name = 'SendError'
  }
}
