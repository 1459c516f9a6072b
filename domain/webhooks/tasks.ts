import type { TaskList } from 'graphile-worker'
import type { Sql } from '../../db/client'
import { TASKS, type JobLog } from '../../db/queue'
import type { Config } from '../../io/config'
import { deliverWebhook } from './deliver'

/** The webhooks' task of the job queue: the deliveries of one webhook, cut short once the worker is `stopping`. */
export function webhookTasks (sql: Sql, config: Config, log: JobLog, stopping: () => boolean): TaskList {
  return {
    [TASKS.webhook]: async payload => {
      const id = Number((payload as { webhookId?: unknown }).webhookId)
      if (!Number.isSafeInteger(id)) return
      const outcome = await deliverWebhook(sql, config, id, stopping)
      if (outcome === 'retrying') log.warn({ webhook: id }, 'webhooks: a delivery failed; retrying')
      if (outcome === 'slowed') log.info({ webhook: id }, 'webhooks: a receiver answered slowly; its next delivery waits')
      if (outcome === 'disabled') log.warn({ webhook: id }, 'webhooks: a webhook failed for too long and is disabled')
    }
  }
}
