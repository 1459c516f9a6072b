import { randomBytes } from 'node:crypto'

const MAX_FILE_NAME = 255

/** Control characters, and the bidirectional marks that can make a name read differently from what it is. */
const CONTROLS = /[\p{Cc}\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu

/** A stored name: 128 random bits and the extension of the detected type. */
export function storedName (ext: string): string {
  return `${randomBytes(16).toString('hex')}.${ext}`
}

/** A temporary name in the target directory; the leading dot keeps it from ever being served. */
export function temporaryName (): string {
  return `.upload-${randomBytes(16).toString('hex')}.part`
}

export const TEMPORARY_NAME = /^\.upload-[0-9a-f]{32}\.part$/

/** Where the stored files are served, by their stored names: attachments and avatars. */
export const UPLOADS_PATH = '/uploads'
export const AVATARS_PATH = '/avatars'

/** An attachment's URL, root-relative: `/uploads/<stored name>`. */
export function uploadUrl (name: string): string {
  return `${UPLOADS_PATH}/${name}`
}

/** An avatar's URL, root-relative: `/avatars/<stored name>`. */
export function avatarUrl (name: string): string {
  return `${AVATARS_PATH}/${name}`
}

/** A name the static routes may serve: a stored name, never a path, a dotfile or a temporary file. */
export function isServableName (name: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}\.[a-z0-9]{1,8}$/.test(name)
}

/**
 * The client's file name as it is kept (only ever shown, never used as a path):
 * its last path segment, without control characters, trimmed, at most 255
 * characters. No name, or the `blob` a browser sends for a Blob without one,
 * becomes `attachment-<date>.<ext>`, from the detected type.
 */
export function cleanFileName (raw: string | undefined, ext: string, now = new Date()): string {
  const last = (raw ?? '').split(/[/\\]/).pop() ?? ''
  const cleaned = Array.from(last.replace(CONTROLS, '').trim()).slice(0, MAX_FILE_NAME).join('').trim()
  if (cleaned === '' || cleaned === '.' || cleaned === '..' || cleaned === 'blob') return `attachment-${now.toISOString().slice(0, 10)}.${ext}`
  return cleaned
}

const STORED_NAME_IN_TEXT = /\b[0-9a-f]{32}\.[a-z0-9]{1,8}\b/g

/** Text with every stored name in it replaced: a stored name is a file's address. */
export function withoutStoredNames (text: string): string {
  return text.replace(STORED_NAME_IN_TEXT, '[stored file]')
}
