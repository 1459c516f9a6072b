import type { Message } from '../channels'
import { longDate, text } from '../i18n'
import type { Language } from '../preferences'

/** What a reminder is about, written in each member's language when it is recorded. */
export type ReminderSubject =
  /** A vaccine's next due date reached; `dose` is the dose due, when the last one had a number. */
  | { kind: 'vaccine', vaccine: string, dose: number | null }
  /** A dose of the child's schedule, due or overdue. */
  | { kind: 'schedule-dose', vaccine: string, dose: number | null, overdue: boolean }
  | { kind: 'visit', type: string }
  /** A medicine dose allowed again from `allowedAt`. */
  | { kind: 'medicine-dose', course: string, allowedAt: Date }

/** What a reminder tells: the child's first name, the item and its date, and nothing else. */
export interface ReminderContent {
  childFirstName: string
  subject: ReminderSubject
  /** The item's date, YYYY-MM-DD. */
  date: string
}

/** The first word of a child's name: a reminder carries no family or last name. */
export function firstName (name: string): string {
  return name.trim().split(/\s+/)[0] ?? ''
}

/** The item in a few words: "MMR vaccine dose 2", "Zahnarzttermin". Times are told in `timeZone`. */
function what (subject: ReminderSubject, language: Language, timeZone: string): string {
  switch (subject.kind) {
    case 'vaccine': {
      const values = { vaccine: subject.vaccine, named: /vaccin/i.test(subject.vaccine) ? 'yes' : 'no' }
      return subject.dose === null ? text(language, 'reminder.vaccine', values) : text(language, 'reminder.vaccineDose', { ...values, dose: subject.dose })
    }
    case 'schedule-dose': {
      const dose = text(language, 'reminder.scheduleDose', { vaccine: subject.vaccine, dose: subject.dose ?? '' })
      return subject.overdue ? text(language, 'reminder.overdue', { what: dose }) : dose
    }
    case 'visit':
      return text(language, 'reminder.visit', { type: subject.type })
    case 'medicine-dose': {
      const time = new Intl.DateTimeFormat(language, { timeStyle: 'short', timeZone }).format(subject.allowedAt)
      return text(language, 'reminder.medicineDose', { course: subject.course, time })
    }
  }
}

/** A reminder in a member's language, its dates as the language writes them. */
export function reminderMessage ({ childFirstName, subject, date }: ReminderContent, language: Language, timeZone: string): Message {
  return {
    title: text(language, 'reminder.title', { child: childFirstName }),
    body: text(language, 'reminder.body', { child: childFirstName, what: what(subject, language, timeZone), date: longDate(language, date) })
  }
}

/** The message that verifies a channel when it is set, in its user's language. */
export function testMessage (language: Language): Message {
  return { title: text(language, 'channel.testTitle'), body: text(language, 'channel.testBody') }
}
