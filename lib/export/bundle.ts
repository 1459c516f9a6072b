import type { Bundle } from '../fhir'
import type { Output } from './output'

const ENTRIES_PER_WRITE = 100

function * chunks<T> (items: T[], size: number): Iterable<T[]> {
  for (let at = 0; at < items.length; at += size) yield items.slice(at, at + size)
}

async function * batches<T> (items: T[], size: number): AsyncIterable<T[]> {
  yield * chunks(items, size)
}

/** The JSON of an object without its closing brace, for more fields to follow. */
export function openObject (value: object): string {
  const text = JSON.stringify(value)
  return text === '{}' ? '{' : `${text.slice(0, -1)},`
}

/** A bundle written a few entries at a time rather than as one string. */
export async function writeBundle (out: Output, bundle: Bundle): Promise<void> {
  const { entry, ...head } = bundle
  await out.write(`${openObject(head)}"entry":`)
  await out.array(batches(entry, ENTRIES_PER_WRITE))
  await out.write('}')
}
