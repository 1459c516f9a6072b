import type { Message } from '../channels'

/** What a reminder tells: the child's first name, the item and its date, and nothing else. */
export interface ReminderContent {
  childFirstName: string
  /** The item: "MMR vaccine dose 2", "wellness visit". */
  what: string
  /** The item's date, YYYY-MM-DD. */
  date: string
}

/** The first word of a child's name: a reminder carries no family or last name. */
export function firstName (name: string): string {
  return name.trim().split(/\s+/)[0] ?? ''
}

export function reminderMessage ({ childFirstName, what, date }: ReminderContent): Message {
  return { title: `Reminder for ${childFirstName}`, body: `${childFirstName}: ${what} on ${date}` }
}

/** The message that verifies a channel when it is set. */
export const TEST_MESSAGE: Message = {
  title: 'Child health: test message',
  body: 'This channel is set up: reminders will arrive here.'
}
