/** What every text made for a user is written in. The API's JSON stays in SI units whatever they say. */
export const UNIT_SYSTEMS = ['metric', 'imperial'] as const
export type UnitSystem = typeof UNIT_SYSTEMS[number]

/** The languages of the message catalogue (lib/i18n). */
export const LANGUAGES = ['en', 'de', 'fr', 'es'] as const
export type Language = typeof LANGUAGES[number]

export interface Preferences {
  units: UnitSystem
  language: Language
  /** An IANA time zone. */
  timeZone: string
}

export const DEFAULT_PREFERENCES: Preferences = { units: 'metric', language: 'en', timeZone: 'UTC' }

/** Whether the runtime knows a time zone by its IANA name. */
export function zoneInIntl (name: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: name }).format(0)
    return true
  } catch {
    return false
  }
}
