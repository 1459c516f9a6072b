import { email } from './email'
import { ntfy } from './ntfy'
import type { Channel, Message } from '../../lib/channels'
import type { ChannelSender, SendOptions } from './sender'
import { webpush } from './webpush'

export { SendError, type Channel, type ChannelType, type Message } from '../../lib/channels'

/** The sender of each type of channel: a new type is one module and one line here. */
const SENDERS: { [T in Channel['type']]: ChannelSender<Extract<Channel, { type: T }>> } = { email, ntfy, webpush }

/** Sends a message to a channel; throws an Error (a SendError) with a readable reason when it does not arrive. */
export async function sendTo (channel: Channel, message: Message, options: SendOptions): Promise<void> {
  const sender = SENDERS[channel.type] as ChannelSender<Channel>
  await sender.send(channel, message, options)
}

/** What makes two channels the same: an e-mail address in any case, a URL, a subscription's endpoint and keys. */
export function channelKey (channel: Channel): string {
  switch (channel.type) {
    case 'email': return `email:${channel.address.toLowerCase()}`
    case 'ntfy': return `ntfy:${channel.url}`
    case 'webpush': return `webpush:${channel.subscription.endpoint} ${channel.subscription.keys.p256dh} ${channel.subscription.keys.auth}`
  }
}
