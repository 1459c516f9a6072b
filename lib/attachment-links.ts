/**
 * The records of the same child an attachment may be linked to: each link's
 * field as the API names it, its column, and the table of the record it names.
 */
export const ATTACHMENT_LINKS = {
  visitId: { column: 'visit_id', kind: 'visits' },
  measurementId: { column: 'measurement_id', kind: 'measurements' },
  illnessId: { column: 'illness_id', kind: 'illnesses' }
} as const

export type AttachmentLink = keyof typeof ATTACHMENT_LINKS

export const ATTACHMENT_LINK_FIELDS = Object.keys(ATTACHMENT_LINKS) as AttachmentLink[]

/** An attachment's links as their columns, an absent one as null. */
export function linkColumns (fields: Partial<Record<AttachmentLink, unknown>>): Record<string, unknown> {
  return Object.fromEntries(ATTACHMENT_LINK_FIELDS.map(field => [ATTACHMENT_LINKS[field].column, fields[field] ?? null]))
}

/** An attachment's links as the API names them, read from their columns, an absent one as null. */
export function linkFields (row: Record<string, unknown>): Record<AttachmentLink, unknown> {
  return Object.fromEntries(ATTACHMENT_LINK_FIELDS.map(field => [field, row[ATTACHMENT_LINKS[field].column] ?? null])) as Record<AttachmentLink, unknown>
}
