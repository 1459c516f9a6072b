import type { IntlMessageFormat } from 'intl-messageformat'
import type { Language } from '../preferences'
import de from './catalogue/de.json'
import en from './catalogue/en.json'
import es from './catalogue/es.json'
import fr from './catalogue/fr.json'

/** A message of the catalogue: English's keys are every language's. */
export type MessageKey = keyof typeof en

/**
 * The message catalogue: every text made for a person, in each language, as
 * ICU messages (plurals and choices are the messages' own, through
 * intl-messageformat). A language without one of English's keys does not
 * compile, and test/i18n.test.ts checks each message's values too.
 */
export const CATALOGUE: Record<Language, Record<MessageKey, string>> = { en, de, fr, es }

const formats = new Map<string, IntlMessageFormat>()

/** A message in a language, with its values. intl-messageformat loads with the first message made. */
export function text (language: Language, key: MessageKey, values: Record<string, string | number> = {}): string {
  const id = `${language}:${key}`
  let format = formats.get(id)
  if (format === undefined) {
    const { IntlMessageFormat } = require('intl-messageformat') as typeof import('intl-messageformat')
    format = new IntlMessageFormat(CATALOGUE[language][key], language)
    formats.set(id, format)
  }
  return String(format.format(values))
}

/** A value a message chooses its words by, as ICU writes choices: 'weight-for-age' is weightForAge. */
export function choice (value: string): string {
  return value.replace(/-(\w)/g, (_, letter: string) => letter.toUpperCase())
}

const dateFormats = new Map<Language, Intl.DateTimeFormat>()

/** A calendar date (YYYY-MM-DD) as the language writes it: "March 5, 2026", "5. März 2026". */
export function longDate (language: Language, date: string): string {
  let format = dateFormats.get(language)
  if (format === undefined) {
    format = new Intl.DateTimeFormat(language, { dateStyle: 'long', timeZone: 'UTC' })
    dateFormats.set(language, format)
  }
  const [year, month, day] = date.split('-').map(Number)
  return format.format(Date.UTC(year, month - 1, day))
}
