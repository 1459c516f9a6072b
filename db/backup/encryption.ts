import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, scrypt, timingSafeEqual } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { open, stat } from 'node:fs/promises'
import { pipeline, Transform, type TransformCallback } from 'node:stream'
import type { ArchiveSource } from './archive'

/**
 * An encrypted backup is the backup's tar file sealed with AES-256-GCM, the
 * key made from a passphrase with scrypt. It is written and read as a stream.
 *
 * Header (61 bytes, numbers big-endian):
 *   0  14  magic `CHBACKUP-ENC1\n`
 *  14   1  scrypt cost as log2 N (15)
 *  15   1  scrypt r (8)
 *  16   1  scrypt p (1)
 *  17   4  plaintext chunk size (65536)
 *  21  16  scrypt salt, random
 *  37   8  nonce prefix, random
 *  45   8  header checksum: the first 8 bytes of SHA-256 of bytes 0-44
 *  53   8  passphrase check: the first 8 bytes of HMAC-SHA256(check key, bytes 0-52)
 *
 * scrypt gives 64 bytes: the AES key, then the check key. The check tells a
 * wrong passphrase from a damaged file.
 *
 * Then the chunks: the plaintext cut into chunks of the chunk size, each
 * encrypted on its own and followed by its 16-byte GCM tag. The nonce is the
 * nonce prefix and the chunk's number (4 bytes, from 0). The additional data
 * is the whole header and one byte, 1 for the last chunk and 0 for the others.
 * Every chunk but the last is full; the last has 0 bytes or more of plaintext.
 * So a reordered, cut short or lengthened file fails to open, and no chunk's
 * plaintext is used before its tag is checked.
 */

export const MAGIC = Buffer.from('CHBACKUP-ENC1\n')
const MAGIC_FAMILY = Buffer.from('CHBACKUP-ENC')
export const HEADER_BYTES = 61
const TAG_BYTES = 16
const CHUNK_BYTES = 64 * 1024
const LOG2_N = 15
const R = 8
const P = 1
/** The most memory a header may ask scrypt for. */
const MAX_SCRYPT_MEMORY = 1024 * 1024 * 1024
const MAX_CHUNKS = 2 ** 32

/** The least number of characters a new backup's passphrase has. */
export const MIN_PASSPHRASE = 8

export class WrongPassphraseError extends Error {
  constructor () {
    super('the passphrase does not open this backup')
    this.name = 'WrongPassphraseError'
  }
}

export class DamagedBackupError extends Error {
  constructor (problem: string) {
    super(`the backup is damaged: ${problem}; nothing was restored`)
    this.name = 'DamagedBackupError'
  }
}

interface Params {
  log2N: number
  r: number
  p: number
  chunkBytes: number
  salt: Buffer
  prefix: Buffer
}

interface Keys {
  cipher: Buffer
  check: Buffer
}

function deriveKeys (passphrase: string, { log2N, r, p, salt }: Params): Promise<Keys> {
  const N = 2 ** log2N
  const secret = Buffer.from(passphrase.normalize('NFC'), 'utf8')
  return new Promise((resolve, reject) => {
    scrypt(secret, salt, 64, { N, r, p, maxmem: 2 * 128 * N * r * p }, (error, key) => {
      if (error !== null) reject(error)
      else resolve({ cipher: key.subarray(0, 32), check: key.subarray(32) })
    })
  })
}

function checksum (bytes: Buffer): Buffer {
  return createHash('sha256').update(bytes).digest().subarray(0, 8)
}

function passphraseCheck (keys: Keys, bytes: Buffer): Buffer {
  return createHmac('sha256', keys.check).update(bytes).digest().subarray(0, 8)
}

function writeHeader (params: Params, keys: Keys): Buffer {
  const header = Buffer.alloc(HEADER_BYTES)
  MAGIC.copy(header, 0)
  header.writeUInt8(params.log2N, 14)
  header.writeUInt8(params.r, 15)
  header.writeUInt8(params.p, 16)
  header.writeUInt32BE(params.chunkBytes, 17)
  params.salt.copy(header, 21)
  params.prefix.copy(header, 37)
  checksum(header.subarray(0, 45)).copy(header, 45)
  passphraseCheck(keys, header.subarray(0, 53)).copy(header, 53)
  return header
}

function readHeader (header: Buffer): Params {
  if (header.length < HEADER_BYTES) throw new DamagedBackupError('it ends inside its encryption header')
  if (!header.subarray(0, MAGIC.length).equals(MAGIC)) throw new Error('the backup is encrypted in a format this release does not read')
  if (!checksum(header.subarray(0, 45)).equals(header.subarray(45, 53))) throw new DamagedBackupError('its encryption header was changed')
  const params = {
    log2N: header.readUInt8(14),
    r: header.readUInt8(15),
    p: header.readUInt8(16),
    chunkBytes: header.readUInt32BE(17),
    salt: Buffer.from(header.subarray(21, 37)),
    prefix: Buffer.from(header.subarray(37, 45))
  }
  const memory = 128 * 2 ** params.log2N * params.r * params.p
  const valid = params.log2N >= 10 && params.log2N <= 22 && params.r >= 1 && params.p >= 1 && memory <= MAX_SCRYPT_MEMORY &&
    params.chunkBytes >= 1024 && params.chunkBytes <= 16 * 1024 * 1024
  if (!valid) throw new DamagedBackupError('its encryption header has values this release does not accept')
  return params
}

function nonce (prefix: Buffer, counter: number): Buffer {
  if (counter >= MAX_CHUNKS) throw new Error('the backup is too large to encrypt')
  const iv = Buffer.alloc(12)
  prefix.copy(iv, 0)
  iv.writeUInt32BE(counter, 8)
  return iv
}

function additionalData (header: Buffer, last: boolean): Buffer {
  return Buffer.concat([header, Buffer.from([last ? 1 : 0])])
}

/** Encrypts the plaintext as it passes: the header first, then one sealed chunk per chunk of plaintext. */
class Sealing extends Transform {
  private pending: Buffer[] = []
  private pendingBytes = 0
  private counter = 0

  constructor (private readonly key: Buffer, private readonly header: Buffer, private readonly prefix: Buffer, private readonly chunkBytes: number) {
    super()
    this.push(header)
  }

  private seal (plain: Buffer, last: boolean): void {
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce(this.prefix, this.counter), { authTagLength: TAG_BYTES })
    cipher.setAAD(additionalData(this.header, last))
    const sealed = Buffer.concat([cipher.update(plain), cipher.final(), cipher.getAuthTag()])
    this.counter += 1
    this.push(sealed)
  }

  override _transform (chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    try {
      this.pending.push(chunk)
      this.pendingBytes += chunk.length
      // A full chunk goes out only when more follows it, so that the last one is sealed as last.
      if (this.pendingBytes > this.chunkBytes) {
        let all = Buffer.concat(this.pending)
        while (all.length > this.chunkBytes) {
          this.seal(all.subarray(0, this.chunkBytes), false)
          all = all.subarray(this.chunkBytes)
        }
        this.pending = [all]
        this.pendingBytes = all.length
      }
      done()
    } catch (error) {
      done(error as Error)
    }
  }

  override _flush (done: TransformCallback): void {
    try {
      this.seal(Buffer.concat(this.pending), true)
      this.pending = []
      done()
    } catch (error) {
      done(error as Error)
    }
  }
}

/** Decrypts the chunks that follow the header; each chunk's plaintext goes on only once its tag is checked. */
class Opening extends Transform {
  private pending = Buffer.alloc(0)
  private counter = 0

  constructor (private readonly key: Buffer, private readonly header: Buffer, private readonly params: Params) {
    super()
  }

  private open (sealed: Buffer, last: boolean): void {
    const decipher = createDecipheriv('aes-256-gcm', this.key, nonce(this.params.prefix, this.counter), { authTagLength: TAG_BYTES })
    decipher.setAAD(additionalData(this.header, last))
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES))
    let plain: Buffer
    try {
      plain = Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - TAG_BYTES)), decipher.final()])
    } catch {
      throw new DamagedBackupError(last ? 'it was changed or cut short after it was written' : 'it was changed after it was written')
    }
    this.counter += 1
    if (plain.length > 0) this.push(plain)
  }

  override _transform (chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    try {
      const frame = this.params.chunkBytes + TAG_BYTES
      let all = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk])
      // The last frame is known only at the end: keep at least one back.
      while (all.length > frame) {
        this.open(all.subarray(0, frame), false)
        all = all.subarray(frame)
      }
      this.pending = Buffer.from(all)
      done()
    } catch (error) {
      done(error as Error)
    }
  }

  override _flush (done: TransformCallback): void {
    try {
      if (this.pending.length < TAG_BYTES) throw new DamagedBackupError('it was cut short after it was written')
      this.open(this.pending, true)
      done()
    } catch (error) {
      done(error as Error)
    }
  }
}

/** A key made from a passphrase with a new salt, to encrypt a new backup with. */
export interface Sealer {
  /** A stream that takes the backup's tar file and gives the encrypted file. */
  stream: () => Transform
}

export async function sealer (passphrase: string, { chunkBytes = CHUNK_BYTES } = {}): Promise<Sealer> {
  const base = { log2N: LOG2_N, r: R, p: P, chunkBytes, salt: randomBytes(16) }
  const keys = await deriveKeys(passphrase, { ...base, prefix: Buffer.alloc(8) })
  return {
    stream () {
      // A new nonce prefix for every stream, so that no nonce repeats under the key.
      const params = { ...base, prefix: randomBytes(8) }
      return new Sealing(keys.cipher, writeHeader(params, keys), params.prefix, chunkBytes)
    }
  }
}

/** The first bytes of a file, as many as the header has (fewer when the file is shorter). */
async function firstBytes (file: string): Promise<Buffer> {
  const handle = await open(file, 'r')
  try {
    const buffer = Buffer.alloc(HEADER_BYTES)
    const { bytesRead } = await handle.read(buffer, 0, HEADER_BYTES, 0)
    return buffer.subarray(0, bytesRead)
  } finally {
    await handle.close()
  }
}

/** Whether a file is an encrypted backup, by its first bytes. */
export async function isEncrypted (file: string): Promise<boolean> {
  const start = await firstBytes(file)
  return start.subarray(0, MAGIC_FAMILY.length).equals(MAGIC_FAMILY)
}

/** How many bytes of plaintext an encrypted file of `size` bytes holds. */
function plainSize (size: number, chunkBytes: number): number {
  const body = Math.max(size - HEADER_BYTES, 0)
  return body - Math.ceil(body / (chunkBytes + TAG_BYTES)) * TAG_BYTES
}

/**
 * Opens an encrypted backup with its passphrase: the header and the
 * passphrase are checked at once, the chunks each time the archive is read.
 */
export async function openEncrypted (file: string, passphrase: string): Promise<ArchiveSource> {
  const header = await firstBytes(file)
  const params = readHeader(header)
  const keys = await deriveKeys(passphrase, params)
  if (!timingSafeEqual(passphraseCheck(keys, header.subarray(0, 53)), header.subarray(53, HEADER_BYTES))) throw new WrongPassphraseError()
  const size = plainSize((await stat(file)).size, params.chunkBytes)
  return {
    size,
    open () {
      const opening = new Opening(keys.cipher, header, params)
      // pipeline passes an error of either stream on to the other and closes the file.
      return pipeline(createReadStream(file, { start: HEADER_BYTES }), opening, () => {})
    }
  }
}
