import { ConfigError } from '../config-error'
import { integer, text, type Env } from '../config-readers'

/** How webhooks are delivered: the wait before each retry, when to give up, how long one attempt and one job may take, what answer is slow. */
export interface WebhooksConfig {
  /** The wait before the first retry of a failed delivery, in milliseconds. */
  retryMs: number
  /** What each next wait is multiplied by. */
  retryGrowth: number
  /** The longest wait between two attempts, in milliseconds. */
  retryMaxMs: number
  /** How long after its first failure in a row a webhook is still tried, in milliseconds; then it is disabled. */
  giveUpMs: number
  /** The longest one attempt may take, in milliseconds. */
  timeoutMs: number
  /** How long one job of a webhook's deliveries may start attempts, in milliseconds; then the webhook goes on in a later job. */
  jobBudgetMs: number
  /** An answer later than this, in milliseconds, though a success, delays the next attempt as a failure would. */
  slowMs: number
}

/** A factor like 2 or 1.5: at least 1, at most 10. */
function factor (env: Env, name: string, fallback: number): number {
  const raw = text(env, name)
  if (raw === undefined) return fallback
  if (!/^\d+(\.\d+)?$/.test(raw)) throw new ConfigError(name, `must be a number like 2 or 1.5, got "${raw}"`)
  const value = Number(raw)
  if (value < 1 || value > 10) throw new ConfigError(name, `must be between 1 and 10, got ${raw}`)
  return value
}

export function webhooksConfig (env: Env): WebhooksConfig {
  const retryMs = integer(env, 'WEBHOOK_RETRY_MS', 5_000, 100, 86_400_000)
  const retryMaxMs = integer(env, 'WEBHOOK_RETRY_MAX_MS', 3_600_000, 100, 86_400_000)
  if (retryMaxMs < retryMs) throw new ConfigError('WEBHOOK_RETRY_MAX_MS', `must not be shorter than WEBHOOK_RETRY_MS (${retryMs})`)
  return {
    retryMs,
    retryGrowth: factor(env, 'WEBHOOK_RETRY_GROWTH', 2),
    retryMaxMs,
    giveUpMs: integer(env, 'WEBHOOK_GIVE_UP_MS', 86_400_000, 1_000, 30 * 86_400_000),
    timeoutMs: integer(env, 'WEBHOOK_TIMEOUT', 10, 1, 120) * 1000,
    jobBudgetMs: integer(env, 'WEBHOOK_JOB_BUDGET_MS', 5_000, 100, 600_000),
    slowMs: integer(env, 'WEBHOOK_SLOW_MS', 5_000, 100, 120_000)
  }
}
