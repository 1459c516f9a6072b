import type { TaskList } from 'graphile-worker'
import type { Sql } from '../../db/client'
import { TASKS, type JobLog } from '../../db/queue'
import type { Config } from '../../lib/config'
import { deliverReminder } from './deliver'
import { scanReminders } from './scan'

/** The reminders' scan, a task of the job queue: the reminders due, recorded with their jobs. */
export function scanTask (sql: Sql, log: JobLog): TaskList {
  return {
    [TASKS.scan]: async () => {
      const made = await scanReminders(sql)
      if (made > 0) log.info({ reminders: made }, 'reminders: new reminders to send')
    }
  }
}

/** The sending of one reminder to one channel, a task of the job queue. */
export function sendTask (sql: Sql, config: Config, log: JobLog): TaskList {
  return {
    [TASKS.send]: async payload => {
      const id = Number((payload as { deliveryId?: unknown }).deliveryId)
      if (!Number.isSafeInteger(id)) return
      const outcome = await deliverReminder(sql, config, id)
      if (outcome === 'retrying' || outcome === 'given up') log.warn({ delivery: id }, `reminders: a reminder did not arrive; ${outcome}`)
    }
  }
}
