import type { Config } from '../../io/config'
import type { Channel, Message } from '../../lib/channels'

export interface SendOptions {
  config: Config
  /** The longest the send may take, in milliseconds. */
  timeoutMs: number
}

/** One module per type of channel: sends a message, or throws an Error whose message says why not. */
export interface ChannelSender<C extends Channel> {
  send: (channel: C, message: Message, options: SendOptions) => Promise<void>
}
