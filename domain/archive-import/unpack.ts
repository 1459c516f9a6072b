import type { RowStage } from '../../sql/import'
import { encodeAvatar } from '../../io/files/avatar'
import { storedName } from '../../lib/files/names'
import { ATTACHMENT_TYPES, AVATAR_TYPES, detectType, type FileType } from '../../io/files/types'
import { ArchiveProblem, type ZipArchive } from '../../io/import/zip'
import { checkSum, type Manifested } from './manifest'
import type { Staging, Unpacked } from './staging'

// The files of an archive's rows, unpacked and checked as uploads are.

export interface ImportOptions {
  uploadDir: string
  avatarDir: string
  /** The most pixels an avatar's frame may have to be decoded. */
  imageMaxPixels: number
}

export interface Reading {
  archive: ZipArchive
  manifest: Manifested
  staging: Staging
  stage: RowStage
  options: ImportOptions
  /** Whose fair share of the image pool the avatars use. */
  imageKey: string
  /** Entries a row named; the others are only checked against the manifest. */
  used: Set<string>
}

/**
 * Unpacks a file of a row into a temporary file of its folder, checking its
 * SHA-256 and size against the manifest and its type, by its bytes, against
 * the accepted ones. Answers null when the export had left the file out (it
 * was missing on disk there).
 */
async function unpack (
  reading: Reading, entry: string, dir: string, accepted: readonly string[]
): Promise<{ temporary: string, size: number, type: FileType } | null> {
  const { archive, manifest, staging, used } = reading
  if (!archive.entries.has(entry)) {
    if (manifest.missing.has(entry)) return null
    throw new ArchiveProblem(`family.json names ${entry}, which the archive does not hold`)
  }
  used.add(entry)
  const temporary = staging.temporary(dir)
  const found = await archive.extract(entry, temporary)
  checkSum(manifest, entry, found)
  const type = await detectType(temporary, accepted)
  if (type === undefined) throw new ArchiveProblem(`the content of ${entry} is not an accepted type (${accepted.join(', ')})`)
  return { temporary, size: found.size, type }
}

/** An attachment's file, typed by its bytes as an upload is. */
export async function unpackAttachment (reading: Reading, entry: string): Promise<Unpacked | null> {
  const dir = reading.options.uploadDir
  const unpacked = await unpack(reading, entry, dir, ATTACHMENT_TYPES)
  if (unpacked === null) return null
  const { temporary, size, type } = unpacked
  const file: Unpacked = { dir, temporary, size, stored: storedName(type.ext), contentType: type.contentType }
  reading.staging.add(file)
  return file
}

/** An avatar's file, re-encoded as an uploaded avatar is: WebP, at most 512 × 512, no metadata. */
export async function unpackAvatar (reading: Reading, entry: string): Promise<Unpacked | null> {
  const dir = reading.options.avatarDir
  const unpacked = await unpack(reading, entry, dir, AVATAR_TYPES)
  if (unpacked === null) return null
  let encoded
  try {
    encoded = await encodeAvatar({ path: unpacked.temporary, size: unpacked.size, type: unpacked.type, fileName: '', fields: {} }, reading.imageKey, reading.options.imageMaxPixels)
  } catch (error) {
    const status = (error as { statusCode?: number }).statusCode
    if (status === 415) throw new ArchiveProblem(`the avatar ${entry} cannot be used: ${(error as Error).message}`)
    throw error
  }
  const file: Unpacked = { dir, temporary: encoded.path, stored: storedName(encoded.type.ext), size: encoded.size, contentType: encoded.type.contentType }
  reading.staging.add(file)
  return file
}
