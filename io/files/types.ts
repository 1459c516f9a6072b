import type * as FileTypes from 'file-type'

/** A stored file's type: the extension it is stored under and the content type it is served with. */
export interface FileType {
  ext: string
  contentType: string
}

/** The extension each known content type is stored under. */
const EXTENSIONS: Record<string, string> = {
  'image/jpeg': 'jpg',
  'image/png': 'png',
  'image/webp': 'webp',
  'image/gif': 'gif',
  'image/heic': 'heic',
  'image/heif': 'heif',
  'application/pdf': 'pdf',
  'application/zip': 'zip'
}

export const ATTACHMENT_TYPES = ['image/jpeg', 'image/png', 'image/webp', 'image/gif', 'image/heic', 'image/heif', 'application/pdf'] as const
export const AVATAR_TYPES = ['image/jpeg', 'image/png', 'image/webp'] as const
export const ARCHIVE_TYPES = ['application/zip'] as const

/**
 * The type of a file read from its bytes, if it is one of `allowed`; the name
 * and declared type play no part. file-type is loaded with the first file
 * received.
 */
export async function detectType (file: string, allowed: readonly string[]): Promise<FileType | undefined> {
  const { fileTypeFromFile } = require('file-type') as typeof FileTypes
  const found = await fileTypeFromFile(file)
  if (found === undefined || !allowed.includes(found.mime) || !Object.hasOwn(EXTENSIONS, found.mime)) return undefined
  return { ext: EXTENSIONS[found.mime], contentType: found.mime }
}
