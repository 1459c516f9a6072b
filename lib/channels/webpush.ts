import { ownAddresses, PRIVATE_HINT, refusedHost } from '../outbound-address'
import { PushError, sendPush } from '../push/send'
import { vapidKeys } from '../push/vapid'
import { SendError, type Channel, type ChannelSender } from './types'

type WebPush = Extract<Channel, { type: 'webpush' }>

/**
 * Web Push: the message as JSON ({ title, body }) to the browser's push
 * service, encrypted for the subscription and signed with the service's VAPID
 * keys (lib/push). A subscription the push service says is gone (404, 410)
 * is not tried again. An endpoint written as an address of this host is
 * refused as ntfy topics are, unless WEBHOOK_ALLOW_PRIVATE=true.
 */
export const webpush: ChannelSender<WebPush> = {
  async send (channel, message, { config, timeoutMs }) {
    const vapid = vapidKeys(config)
    if (vapid === null) throw new SendError('Web Push is off on this service: it needs VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY', true)
    if (!config.webhookAllowPrivate) {
      const refused = refusedHost(new URL(channel.subscription.endpoint), ownAddresses(config.host))
      if (refused !== null) throw new SendError(`${refused}, ${PRIVATE_HINT}`, true)
    }
    try {
      await sendPush(channel.subscription, JSON.stringify(message), vapid, { timeoutMs })
    } catch (error) {
      const gone = error instanceof PushError && error.gone
      throw new SendError((error as Error).message, gone)
    }
  }
}
