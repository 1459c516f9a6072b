/**
 * The child and its attachments as a bundle reads them, in the shapes the
 * API answers: dates `YYYY-MM-DD`, timestamps RFC 3339 in UTC, empty fields
 * null. The records of each kind have their own types, in their kind modules.
 */

/**
 * A child's fields that a bundle reads, its timestamps as `Time`: RFC 3339
 * text in a bundle, dates as the database gives them.
 */
export interface ChildOf<Time> {
  id: number
  familyId: number
  name: string
  dateOfBirth: string
  sex: 'female' | 'male' | 'other'
  avatarUrl: string | null
  gestationalAgeAtBirthWeeks: number | null
  gestationalAgeAtBirthDays: number | null
  createdAt: Time
  updatedAt: Time
}

export type FhirChild = ChildOf<string>

/** An attachment's fields that a bundle reads, its timestamp as `Time`, as a child's. */
export interface AttachmentOf<Time> {
  id: number
  childId: number
  visitId: number | null
  measurementId: number | null
  illnessId: number | null
  fileName: string
  contentType: string
  sizeBytes: number
  url: string
  createdAt: Time
}

export interface Attachment extends AttachmentOf<string> {
  /** The file's bytes, base64, when the bundle carries them instead of the file's address. */
  data?: string
}
