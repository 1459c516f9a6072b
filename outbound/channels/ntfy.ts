import { PostError, postOnce } from '../post'
import { SendError, type Channel } from '../../lib/channels'
import type { ChannelSender } from './sender'

type Ntfy = Extract<Channel, { type: 'ntfy' }>

/** A header's text: as is when ASCII, otherwise an RFC 2047 encoded word, which ntfy decodes. */
function headerText (value: string): string {
  return /^[\x20-\x7e]*$/.test(value) ? value : `=?UTF-8?B?${Buffer.from(value, 'utf8').toString('base64')}?=`
}

/**
 * ntfy: the message's text POSTed to the topic's URL with its title in the
 * Title header. A user name and password in the URL are sent as Basic
 * authentication. Redirects are not followed; the whole request takes at most
 * the send timeout. The URL's address follows the outbound rule
 * (outbound/address.ts); an answer's body is never shown, only its status.
 */
export const ntfy: ChannelSender<Ntfy> = {
  async send (channel, message, { config, timeoutMs }) {
    let answer
    try {
      answer = await postOnce(channel.url, {
        headers: { 'content-type': 'text/plain; charset=utf-8', title: headerText(message.title) },
        body: Buffer.from(message.body, 'utf8'),
        timeoutMs,
        allowPrivate: config.webhookAllowPrivate,
        host: config.host,
        what: 'ntfy'
      })
    } catch (error) {
      if (error instanceof PostError) throw new SendError(error.message, error.refused, error.cause)
      throw error
    }
    const { status } = answer
    if (status >= 300 && status < 400) throw new SendError(`ntfy answered ${status}: redirects are not followed`, true)
    if (status < 200 || status >= 300) throw new SendError(`ntfy answered ${status}`)
  }
}
