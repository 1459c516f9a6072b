import type { FileType } from './types'

/** A received upload, in a temporary file of its target directory until it is stored. */
export interface Upload {
  path: string
  size: number
  /** The SHA-256 of the bytes received, hex, for a file that came in a request. */
  sha256?: string
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
  /** Bytes a second the upload must bring over each window of `rateWindowMs`, the first one a grace; 0 for no minimum. */
  minRate: number
  rateWindowMs: number
}
