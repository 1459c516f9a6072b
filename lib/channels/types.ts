import type { Config } from '../config'
import type { PushSubscription } from '../push/send'

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

export interface SendOptions {
  config: Config
  /** The longest the send may take, in milliseconds. */
  timeoutMs: number
}

/** A failure of a send, with a reason a user can read; `permanent` when trying again cannot help; the cause, for the log. */
export class SendError extends Error {
  constructor (message: string, readonly permanent = false, cause?: unknown) {
    super(message, { cause })
    this.name = 'SendError'
  }
}

/** One module per type of channel: sends a message, or throws an Error whose message says why not. */
export interface ChannelSender<C extends Channel> {
  send: (channel: C, message: Message, options: SendOptions) => Promise<void>
}
