import type { Annotation } from './resources'

/** `{ [key]: value }`, or nothing when the value is null or undefined. */
export function ifPresent<K extends string, V> (key: K, value: V | null | undefined): { [P in K]?: V } {
  return value === null || value === undefined ? {} : ({ [key]: value } as { [P in K]?: V })
}

/** `{ note }` with one annotation per text given, or nothing when all are null. */
export function annotations (...texts: Array<string | null>): { note?: Annotation[] } {
  const note = texts.filter((text): text is string => text !== null).map(text => ({ text }))
  return ifPresent('note', note.length === 0 ? null : note)
}
