import { Type } from '@sinclair/typebox'
import { Id, Nullable } from '../lib/schemas'

/**
 * The body field that links a record to a visit (a measurement's,
 * an illness's, a medical event's), with its rules.
 */
export function VisitLink (dateField: string, ongoing = false) {
  const own = ongoing ? `${dateField} (today while it is not set)` : dateField
  return Type.Optional(Nullable(Type.Integer({
    ...Id,
    description: `A visit of the same child, dated on or before this record's ${own}: a visit ahead (an appointment) cannot be linked ` +
      'before the record\'s date has reached it (400 at /body/visitId otherwise). Null: no visit.'
  })))
}
