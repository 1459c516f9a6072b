import type { Bundle, BundleEntry } from '../fhir'
import type { Output } from './output'

/** The JSON of an object without its closing brace, for more fields to follow. */
export function openObject (value: object): string {
  const text = JSON.stringify(value)
  return text === '{}' ? '{' : `${text.slice(0, -1)},`
}

/** A bundle written as its entries come, batch by batch, never as one string. */
export async function writeBundle (out: Output, head: Omit<Bundle, 'entry'>, entries: AsyncIterable<BundleEntry[]>): Promise<void> {
  await out.write(`${openObject(head)}"entry":`)
  await out.array(entries)
  await out.write('}')
}
