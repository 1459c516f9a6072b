import { createHash } from 'node:crypto'
import type { BundleEntry, Reference, Resource } from './resources'

/**
 * The namespace of every name-based UUID in the service's bundles. It never
 * changes, so a record keeps its UUID from one export to the next.
 */
export const EXPORT_NAMESPACE = '644401e3-a3db-4e42-a35a-1f355c7d9de1'

/** A name-based UUID, version 5 (SHA-1), as RFC 9562 defines it. */
export function uuidV5 (namespace: string, name: string): string {
  const bytes = createHash('sha1')
    .update(Buffer.from(namespace.replace(/-/g, ''), 'hex'))
    .update(name, 'utf8')
    .digest()
    .subarray(0, 16)
  bytes[6] = (bytes[6] & 0x0f) | 0x50
  bytes[8] = (bytes[8] & 0x3f) | 0x80
  const hex = bytes.toString('hex')
  return [hex.slice(0, 8), hex.slice(8, 12), hex.slice(12, 16), hex.slice(16, 20), hex.slice(20)].join('-')
}

/**
 * The UUID of the resource made from a record: from its kind (as its mapping
 * names it: `medical-event`), its id and, for records that give several
 * resources, the part (`measurement/7/bmi`).
 */
export function resourceId (kind: string, id: number, part?: string): string {
  const name = part === undefined ? `${kind}/${id}` : `${kind}/${id}/${part}`
  return uuidV5(EXPORT_NAMESPACE, name)
}

export function fullUrl (uuid: string): string {
  return `urn:uuid:${uuid}`
}

export function entry<R extends Resource> (resource: R): BundleEntry<R> {
  return { fullUrl: fullUrl(resource.id), resource }
}

export function referenceTo (resource: Resource): Reference {
  return { reference: fullUrl(resource.id), type: resource.resourceType }
}
