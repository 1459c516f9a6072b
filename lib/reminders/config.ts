import { ConfigError } from '../config-error'
import { integer, text, type Env } from '../config-readers'

/** How reminders are sent: e-mail, retries. */
export interface RemindersConfig {
  /** The SMTP server e-mail goes through, and the sender; null when e-mail is not set up. */
  smtp: { url: string, from: string } | null
  /** The wait before the first retry of a failed reminder, in milliseconds; each next retry waits twice as long. */
  retryMs: number
  /** Attempts of one reminder on one channel before it is given up. */
  attempts: number
  /** The longest one message may take to be sent, in milliseconds. */
  sendTimeoutMs: number
}

/** An address, or a name and an address in angle brackets: `Child health <health@example.org>`. */
const MAIL_FROM = /^([^<>\r\n]*<[^\s<>@]+@[^\s<>@]+>|[^\s<>@]+@[^\s<>@]+)$/

function smtp (env: Env): RemindersConfig['smtp'] {
  const url = text(env, 'SMTP_URL')
  const from = text(env, 'MAIL_FROM')
  if (url === undefined) {
    if (from !== undefined) throw new ConfigError('MAIL_FROM', 'needs SMTP_URL')
    return null
  }
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new ConfigError('SMTP_URL', 'must be a URL like smtp://user:password@host:587 or smtps://host:465')
  }
  if (parsed.protocol !== 'smtp:' && parsed.protocol !== 'smtps:') throw new ConfigError('SMTP_URL', 'must start with smtp:// or smtps://')
  if (from === undefined) throw new ConfigError('MAIL_FROM', 'is required with SMTP_URL: the address reminders are sent from')
  if (!MAIL_FROM.test(from)) throw new ConfigError('MAIL_FROM', `must be an address or "Name <address>", got "${from}"`)
  return { url, from }
}

export function remindersConfig (env: Env): RemindersConfig {
  return {
    smtp: smtp(env),
    retryMs: integer(env, 'REMINDER_RETRY_MS', 60_000, 100, 86_400_000),
    attempts: integer(env, 'REMINDER_ATTEMPTS', 6, 1, 100),
    sendTimeoutMs: integer(env, 'REMINDER_SEND_TIMEOUT', 10, 1, 120) * 1000
  }
}
