import type { FileType } from './types'

/** A received upload, in a temporary file of its target directory until it is stored. */
export interface Upload {
  path: string
  size: number
  type: FileType
  fileName: string
  /** The text fields, converted like query strings. */
  fields: Record<string, string | number>
}

export interface UploadRules {
  dir: string
  maxSize: number
  /** The content types accepted, as detected from the bytes. */
  types: readonly string[]
  /** The text fields allowed beside `file`. */
  fields: readonly string[]
}
