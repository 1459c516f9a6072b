import { Type, type TProperties } from '@sinclair/typebox'
import { Id, Timestamp, Version } from '../lib/schemas'

/**
 * A record's answer schema, named by its `$id` and title: its id and its
 * child's first, then its own fields, then its version and timestamps.
 */
export function recordSchema<Properties extends TProperties> (name: string, properties: Properties, description?: string) {
  return Type.Object(
    { id: Id, childId: Id, ...properties, version: Version, createdAt: Timestamp, updatedAt: Timestamp },
    { $id: name, title: name, ...(description === undefined ? {} : { description }) }
  )
}
