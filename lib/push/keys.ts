import { createECDH, ECDH } from 'node:crypto'

/** The curve of Web Push's keys, VAPID's and a subscription's alike: NIST P-256. */
export const CURVE = 'prime256v1'

const BASE64URL = /^[A-Za-z0-9_-]+$/

/** The bytes of an unpadded base64url text, or null when it is not one. */
export function base64urlBytes (text: string): Buffer | null {
  if (!BASE64URL.test(text) || text.length % 4 === 1) return null
  return Buffer.from(text, 'base64url')
}

/** What is wrong with a P-256 public key as Web Push carries it (65 bytes, an uncompressed point on the curve), or null. */
export function pointProblem (bytes: Buffer): string | null {
  if (bytes.length !== 65 || bytes[0] !== 0x04) return `must be an uncompressed P-256 point (65 bytes starting with 0x04), got ${bytes.length} bytes`
  try {
    ECDH.convertKey(bytes, CURVE)
  } catch {
    return 'is not a point on the P-256 curve'
  }
  return null
}

/** What is wrong with a P-256 private key (32 bytes, a scalar below the curve's order), or null. */
export function scalarProblem (bytes: Buffer): string | null {
  if (bytes.length !== 32) return `must be 32 bytes, got ${bytes.length}`
  try {
    createECDH(CURVE).setPrivateKey(bytes)
  } catch {
    return 'is not a valid P-256 private key'
  }
  return null
}

/** Whether a private key is the one of a public key: its point, computed again, is the public key. */
export function keysMatch (publicKey: Buffer, privateKey: Buffer): boolean {
  const ecdh = createECDH(CURVE)
  ecdh.setPrivateKey(privateKey)
  return ecdh.getPublicKey().equals(publicKey)
}
