// The scan for reminders due: every source's items, for the members of each
// time zone, recorded once per member, channel and item with their jobs, in
// each member's language.
import type { Sql } from '../../db/client'
import { reminderMessage } from '../../lib/reminders/message'
import { LANGUAGES } from '../../lib/preferences'
import { recipientFamilies, recipientZones, recordReminders, requeueOpen } from '../../sql/reminder-deliveries'
import { REMINDER_SOURCES } from '../../sql/reminder-items'

/**
 * Looks for reminders due now: for each time zone of the users with channels,
 * the items every source finds in their families, recorded for each owner and
 * member and each of their channels unless recorded before. Reminders still
 * to send whose job is missing get one. Answers how many reminders were new.
 */
export async function scanReminders (sql: Sql, now = new Date()): Promise<number> {
  let made = 0
  for (const { timeZone, today } of await recipientZones(sql)) {
    const families = await recipientFamilies(sql, timeZone)
    if (families.length === 0) continue
    const found = await Promise.all(REMINDER_SOURCES.map(source => source(sql, families, { today, now, timeZone })))
    // Each item in every language: each member is sent the one they read.
    const reminders = found.flat().flatMap(item => LANGUAGES.map(language => ({
      familyId: item.familyId, childId: item.childId, itemKey: item.itemKey, language, ...reminderMessage(item, language, timeZone)
    })))
    made += await sql.begin(async tx => await recordReminders(tx, timeZone, reminders))
  }
  await requeueOpen(sql, { mode: 'unsafe_dedupe' })
  return made
}
