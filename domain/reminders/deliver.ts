// One reminder sent to one channel, once: claimed in a transaction, sent
// outside any, and its outcome recorded with its retry's job.
import type { Sql } from '../../db/client'
import { SendError, sendTo } from '../../outbound/channels'
import type { Config } from '../../io/config'
import { claimDelivery, deliveryFailed, deliverySent } from '../../sql/reminder-deliveries'

export type Outcome = 'none' | 'deferred' | 'sent' | 'retrying' | 'given up'

/** The wait before the attempt after `attempt`: REMINDER_RETRY_MS, doubled after each failure. */
export function retryDelay (config: Config, attempt: number): number {
  return config.reminders.retryMs * 2 ** Math.min(attempt - 1, 20)
}

/**
 * Sends a reminder: nothing when it was sent, given up or cancelled; put off
 * while its user's quiet hours hold. A failure is recorded on its channel
 * and tried again after a growing wait, until REMINDER_ATTEMPTS attempts
 * (or at once when trying again cannot help), then given up.
 */
export async function deliverReminder (sql: Sql, config: Config, id: number): Promise<Outcome> {
  const claim = await sql.begin(async tx => await claimDelivery(tx, id))
  if (claim.kind !== 'send') return claim.kind
  try {
    await sendTo(claim.channel, claim.message, { config, timeoutMs: config.reminders.sendTimeoutMs })
  } catch (error) {
    const permanent = error instanceof SendError && error.permanent
    const gaveUp = permanent || claim.attempt >= config.reminders.attempts
    const retryAt = gaveUp ? null : new Date(Date.now() + retryDelay(config, claim.attempt))
    await sql.begin(async tx => { await deliveryFailed(tx, id, (error as Error).message, retryAt) })
    return gaveUp ? 'given up' : 'retrying'
  }
  await deliverySent(sql, id)
  return 'sent'
}
