import { createCipheriv, createDecipheriv, randomBytes, timingSafeEqual } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { open, stat } from 'node:fs/promises'
import { pipeline, Transform, type TransformCallback } from 'node:stream'
import type { ArchiveSource } from './archive'
import {
  CHUNK_BYTES, DamagedBackupError, deriveKeys, HEADER_BYTES, MAGIC_FAMILY, MAX_CHUNKS, passphraseCheck, readHeader, SCRYPT, TAG_BYTES,
  WrongPassphraseError, writeHeader, type Params
} from './encryption-header'

export { DamagedBackupError, HEADER_BYTES, MAGIC, MIN_PASSPHRASE, WrongPassphraseError } from './encryption-header'

// An encrypted backup's format is described in encryption-header.ts; this
// module seals and opens its chunks as streams.

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
  const base = { ...SCRYPT, chunkBytes, salt: randomBytes(16) }
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
