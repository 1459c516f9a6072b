import type Nodemailer from 'nodemailer'
import { SendError, type Channel } from '../../lib/channels'
import type { ChannelSender } from './sender'

type Email = Extract<Channel, { type: 'email' }>

/**
 * E-mail through the SMTP server of SMTP_URL, from MAIL_FROM: the title as
 * the subject, the text as a plain-text body. Every step of the SMTP
 * conversation is bounded by the send timeout. nodemailer is loaded with
 * the first e-mail sent.
 */
export const email: ChannelSender<Email> = {
  async send (channel, message, { config, timeoutMs }) {
    const smtp = config.reminders.smtp
    if (smtp === null) throw new SendError('e-mail is not set up on this service (SMTP_URL and MAIL_FROM)', true)
    const { createTransport } = require('nodemailer') as typeof Nodemailer
    const transport = createTransport({
      url: smtp.url,
      connectionTimeout: timeoutMs,
      greetingTimeout: timeoutMs,
      socketTimeout: timeoutMs,
      dnsTimeout: timeoutMs
    })
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs)
    })
    const sending = transport.sendMail({ from: smtp.from, to: channel.address, subject: message.title, text: message.body })
    // Once late, the send's own failure has nobody waiting for it.
    sending.catch(() => {})
    try {
      await Promise.race([sending, late])
    } catch (error) {
      throw new SendError(`the e-mail could not be sent: ${(error as Error).message}`)
    } finally {
      clearTimeout(timer)
      transport.close()
    }
  }
}
