import { PostError } from '../post'
import { PushError, sendPush } from '../push'
import { vapidKeys } from '../../io/vapid'
import { SendError, type Channel } from '../../lib/channels'
import type { ChannelSender } from './sender'

type WebPush = Extract<Channel, { type: 'webpush' }>

/**
 * Web Push: the message as JSON ({ title, body }) to the browser's push
 * service, encrypted for the subscription and signed with the service's VAPID
 * keys (lib/push). The endpoint's address follows the outbound rule
 * (outbound/address.ts) as ntfy topics do. A subscription the push service
 * says is gone (404, 410), or an address refused, is not tried again.
 */
export const webpush: ChannelSender<WebPush> = {
  async send (channel, message, { config, timeoutMs }) {
    const vapid = vapidKeys(config)
    if (vapid === null) throw new SendError('Web Push is off on this service: it needs VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY', true)
    try {
      await sendPush(channel.subscription, JSON.stringify(message), vapid, { timeoutMs, allowPrivate: config.webhookAllowPrivate, host: config.host })
    } catch (error) {
      const permanent = (error instanceof PushError && error.gone) || (error instanceof PostError && error.refused)
      throw new SendError((error as Error).message, permanent, (error as Error).cause)
    }
  }
}
