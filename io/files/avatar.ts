import path from 'node:path'
import type SharpModule from 'sharp'
import { errors, withDetails } from '../../lib/errors'
import { FairQueue } from '../../lib/fair-queue'
import { temporaryName } from '../../lib/files/names'
import { removeQuietly } from './store'
import type { Upload } from './upload'

export const AVATAR_SIZE = 512

/** Images decoded at once in this process: each takes a thread of libuv's pool of four, and up to a frame's pixels in memory. */
export const IMAGE_CONCURRENCY = 2

/** Images one key (a user) may have waiting or running at once; one more is refused with QueueFull. */
export const IMAGE_JOBS_PER_KEY = 2

/** The process's image work, served in turns between keys. */
export const imageWork = new FairQueue(IMAGE_CONCURRENCY, IMAGE_JOBS_PER_KEY)

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
 * Refuses an image whose first frame has more than `maxPixels` pixels, from
 * its header alone (an animated WebP's canvas is the size of each frame).
 */
async function checkBudget (sharp: typeof SharpModule, file: string, maxPixels: number): Promise<void> {
  let width: number | undefined
  let height: number | undefined
  try {
    // The header only: no pixel is decoded, so sharp's own limit is not needed here.
    const header = await sharp(file, { limitInputPixels: false }).metadata()
    width = header.width
    height = header.pageHeight ?? header.height
  } catch {}
  if (width === undefined || height === undefined) throw new errors.unsupportedMediaType('The image could not be read')
  if (width * height > maxPixels) {
    const error = new errors.unsupportedMediaType(`The image is ${width} × ${height} pixels; at most ${maxPixels} pixels are decoded (IMAGE_MAX_PIXELS)`)
    throw withDetails(error, { width, height, maxPixels })
  }
}

async function encode (upload: Upload, maxPixels: number): Promise<Upload> {
  const sharp = imageLibrary()
  await checkBudget(sharp, upload.path, maxPixels)
  const output = path.join(path.dirname(upload.path), temporaryName())
  try {
    const info = await sharp(upload.path, { limitInputPixels: maxPixels, pages: 1, page: 0 })
      .rotate()
      .resize(AVATAR_SIZE, AVATAR_SIZE, { fit: 'inside', withoutEnlargement: true })
      .webp({ quality: 85 })
      .toFile(output)
    return { ...upload, path: output, size: info.size, type: { ext: 'webp', contentType: 'image/webp' } }
  } catch {
    await removeQuietly(output)
    throw new errors.unsupportedMediaType('The image could not be read')
  }
}

/**
 * Turns a received image into the avatar that is kept: upright, its first
 * frame only, at most 512 × 512, re-encoded as WebP. Nothing of the
 * original's metadata (EXIF, GPS, ICC, XMP) is copied.
 *
 * The header is read first: a frame of more than `maxPixels` pixels is a 415
 * before any pixel is decoded. The work waits its turn in `imageWork` under
 * `key`, the user it is done for (the uploader, or the user importing an
 * archive); a key that already has IMAGE_JOBS_PER_KEY images waiting or
 * running is refused at once with QueueFull, which the caller answers as it
 * sees fit (a 429 for an upload). The avatar is written beside the original
 * under a temporary name; the original is removed in every case.
 */
export async function encodeAvatar (upload: Upload, key: string, maxPixels: number): Promise<Upload> {
  try {
    return await imageWork.run(key, () => encode(upload, maxPixels))
  } finally {
    await removeQuietly(upload.path)
  }
}
