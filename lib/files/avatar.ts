import path from 'node:path'
import type SharpModule from 'sharp'
import { errors } from '../errors'
import { temporaryName } from './names'
import { removeQuietly } from './store'
import type { Upload } from './upload'

export const AVATAR_SIZE = 512

/** Larger images are refused rather than decoded: about 100 megapixels. */
const MAX_INPUT_PIXELS = 100_000_000

let library: typeof SharpModule | null = null

/**
 * sharp, loaded on the first avatar: its binaries are optional dependencies,
 * and an installation without them still serves everything but avatars.
 */
function imageLibrary (): typeof SharpModule {
  if (library === null) {
    try {
      library = require('sharp') as typeof SharpModule
    } catch {
      throw new errors.serviceUnavailable('Avatars need the image library sharp with its binaries, which this installation lacks: install without --omit=optional')
    }
  }
  return library
}

/**
 * Turns a received image into the avatar that is kept: upright, at most
 * 512 × 512, re-encoded as WebP. Nothing of the original's metadata (EXIF,
 * GPS, ICC, XMP) is copied. The original temporary file is removed.
 */
export async function encodeAvatar (upload: Upload): Promise<Upload> {
  let sharp: typeof SharpModule
  try {
    sharp = imageLibrary()
  } catch (error) {
    await removeQuietly(upload.path)
    throw error
  }
  const output = path.join(path.dirname(upload.path), temporaryName())
  try {
    const info = await sharp(upload.path, { limitInputPixels: MAX_INPUT_PIXELS })
      .rotate()
      .resize(AVATAR_SIZE, AVATAR_SIZE, { fit: 'inside', withoutEnlargement: true })
      .webp({ quality: 85 })
      .toFile(output)
    return { ...upload, path: output, size: info.size, type: { ext: 'webp', contentType: 'image/webp' } }
  } catch {
    await removeQuietly(output)
    throw new errors.unsupportedMediaType('The image could not be read')
  } finally {
    await removeQuietly(upload.path)
  }
}
