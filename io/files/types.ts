import { fileTypeFromFile } from 'file-type'

/** A stored file's type: the extension it is stored under and the content type it is served with. */
export interface FileType {
  ext: string
  contentType: string
}

const KNOWN: Record<string, FileType> = {
  'image/jpeg': { ext: 'jpg', contentType: 'image/jpeg' },
  'image/png': { ext: 'png', contentType: 'image/png' },
  'image/webp': { ext: 'webp', contentType: 'image/webp' },
  'image/gif': { ext: 'gif', contentType: 'image/gif' },
  'image/heic': { ext: 'heic', contentType: 'image/heic' },
  'image/heif': { ext: 'heif', contentType: 'image/heif' },
  'application/pdf': { ext: 'pdf', contentType: 'application/pdf' },
  'application/zip': { ext: 'zip', contentType: 'application/zip' }
}

export const ATTACHMENT_TYPES = ['image/jpeg', 'image/png', 'image/webp', 'image/gif', 'image/heic', 'image/heif', 'application/pdf'] as const
export const AVATAR_TYPES = ['image/jpeg', 'image/png', 'image/webp'] as const
export const ARCHIVE_TYPES = ['application/zip'] as const

/** The type of a file read from its bytes, if it is one of `allowed`; the name and declared type play no part. */
export async function detectType (file: string, allowed: readonly string[]): Promise<FileType | undefined> {
  const found = await fileTypeFromFile(file)
  if (found === undefined || !allowed.includes(found.mime)) return undefined
  return KNOWN[found.mime]
}
