import type { TObject, TProperties, TSchema } from '@sinclair/typebox'

type Values = Record<string, unknown>

/** A field's column: the API's camelCase name in snake_case (`headCircumferenceCm` is `head_circumference_cm`). */
export function columnName (field: string): string {
  return field.replace(/[A-Z]/g, letter => `_${letter.toLowerCase()}`)
}

/** The columns of a response schema, each field by its name, but for the fields an answer derives. */
export function columnsOf (schema: TObject, derived: string[] = []): Record<string, string> {
  const fields = Object.keys(schema.properties).filter(field => !derived.includes(field))
  return Object.fromEntries(fields.map(field => [field, columnName(field)]))
}

/**
 * How a row the change log keeps (the table's columns) reads as the kind's
 * GET answers it: each column under its field, timestamps (text in the log)
 * as dates, then the fields the kind derives.
 */
export function storedPresenter (
  schema: TObject, columns: Record<string, string>, toResponse: (row: Values) => Values = row => row
): (row: Values) => Values {
  const timestamps = Object.keys(columns).filter(field => (schema.properties[field] as TSchema).format === 'date-time')
  return row => {
    const out: Values = {}
    for (const [field, column] of Object.entries(columns)) out[field] = row[column] ?? null
    for (const field of timestamps) {
      if (typeof out[field] === 'string') out[field] = new Date(out[field] as string)
    }
    return toResponse(out)
  }
}

/**
 * A kind's answer schema and body fields, with what follows from them: its
 * columns (but for the fields its answers derive), how a row the change log
 * keeps reads, and the fields a client writes.
 */
export function storedFields (
  schema: TObject, fields: TProperties, derived: { fields: string[], toResponse: (row: Values) => Values } = { fields: [], toResponse: row => row }
): { schema: TObject, fields: TProperties, columns: Record<string, string>, present: (row: Values) => Values, writable: string[] } {
  const columns = columnsOf(schema, derived.fields)
  return { schema, fields, columns, present: storedPresenter(schema, columns, derived.toResponse), writable: Object.keys(fields) }
}
