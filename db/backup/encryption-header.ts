import { createHash, createHmac, scrypt } from 'node:crypto'

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
export const MAGIC_FAMILY = Buffer.from('CHBACKUP-ENC')
export const HEADER_BYTES = 61
export const TAG_BYTES = 16
export const CHUNK_BYTES = 64 * 1024
/** The scrypt cost a new backup is written with, as its header names it. */
export const SCRYPT = { log2N: 15, r: 8, p: 1 }
/** The most memory a header may ask scrypt for. */
const MAX_SCRYPT_MEMORY = 1024 * 1024 * 1024
export const MAX_CHUNKS = 2 ** 32

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

export interface Params {
  log2N: number
  r: number
  p: number
  chunkBytes: number
  salt: Buffer
  prefix: Buffer
}

export interface Keys {
  cipher: Buffer
  check: Buffer
}

export function deriveKeys (passphrase: string, { log2N, r, p, salt }: Params): Promise<Keys> {
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

export function passphraseCheck (keys: Keys, bytes: Buffer): Buffer {
  return createHmac('sha256', keys.check).update(bytes).digest().subarray(0, 8)
}

export function writeHeader (params: Params, keys: Keys): Buffer {
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

export function readHeader (header: Buffer): Params {
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
