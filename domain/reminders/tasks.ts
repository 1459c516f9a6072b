import type { TaskList } from 'graphile-worker'
import type { Sql } from '../../db/client'
import { TASKS, type JobLog } from '../../db/queue'
import type { Config } from '../../io/config'
import { deliverReminder } from './deliver'
import { scanReminders } from './scan'

/** The reminders' tasks of the job queue: the scan for reminders due, and the sending of one. */
export function reminderTasks (sql: Sql, config: Config, log: JobLog): TaskList {
  return {
    [TASKS.scan]: async () => {
      const made = await scanReminders(sql)
      if (made > 0) log.info({ reminders: made }, 'reminders: new reminders to send')
    },
    [TASKS.send]: async payload => {
      const id = Number((payload as { deliveryId?: unknown }).deliveryId)
      if (!Number.isSafeInteger(id)) return
      const outcome = await deliverReminder(sql, config, id)
      if (outcome === 'retrying' || outcome === 'given up') log.warn({ delivery: id }, `reminders: a reminder did not arrive; ${outcome}`)
    }
  }
}
