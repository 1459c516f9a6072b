import { createHash, randomBytes } from 'node:crypto'
import type * as Jose from 'jose'
import type QRCode from 'qrcode'

/**
 * SMART Health Links (HL7 FHIR IG smart-health-cards-and-links): the link's
 * secrets, its payload, its files' encryption and its QR code. The
 * cryptography is jose's, the QR code qrcode's; both are loaded with the
 * first link made, not with the service.
 */

/** The content type of a FHIR file of a manifest, in its JWE's `cty` too. */
export const FHIR_JSON = 'application/fhir+json'

/** The protocol version the links follow. */
export const SHL_VERSION = 1

/** A label is at most this many characters: it travels in the clear, in the link. */
export const LABEL_MAX = 80

/** 32 random bytes, base64url: 43 characters, 256 bits. */
export function randomToken (): string {
  return randomBytes(32).toString('base64url')
}

/** A token as the database keeps it: its SHA-256, never the token. */
export function tokenHash (token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

/** A token as the links carry them: 43 base64url characters. */
export const TOKEN = /^[A-Za-z0-9_-]{43}$/

/** A fresh key for a link's files: 32 random bytes, for AES-256-GCM. */
export function newKey (): Uint8Array {
  return new Uint8Array(randomBytes(32))
}

/**
 * A file of a link as a compact JWE: `dir` with the link's key, `A256GCM`,
 * and its content type in `cty`. jose draws a fresh IV for each.
 */
export async function encryptFile (plaintext: Uint8Array, key: Uint8Array, contentType: string): Promise<string> {
  const { CompactEncrypt } = require('jose') as typeof Jose
  return await new CompactEncrypt(plaintext)
    .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', cty: contentType })
    .encrypt(key)
}

export interface LinkPayload {
  /** The manifest's absolute URL. */
  url: string
  key: Uint8Array
  /** When the link expires. */
  expiresAt: Date
  passcode: boolean
  label: string
}

/**
 * The `shlink:/` URI: the payload `{ url, key, exp, flag, label, v }`,
 * minified, base64url. `flag` is `P` when a passcode is needed and absent
 * otherwise.
 */
export function shlink (payload: LinkPayload): string {
  const json = {
    url: payload.url,
    key: Buffer.from(payload.key).toString('base64url'),
    exp: Math.floor(payload.expiresAt.getTime() / 1000),
    ...(payload.passcode ? { flag: 'P' } : {}),
    label: payload.label,
    v: SHL_VERSION
  }
  return `shlink:/${Buffer.from(JSON.stringify(json)).toString('base64url')}`
}

/** What a viewer opens: a viewer page's URL ending in `#`, then the link; or the bare link. */
export function viewerLink (link: string, publicUrl: string | null): string {
  return publicUrl === null ? link : `${publicUrl}/share#${link}`
}

/** A PNG QR code of the text as a data URL, at error correction level M as the specification recommends. */
export async function qrDataUrl (text: string): Promise<string> {
  return await (require('qrcode') as typeof QRCode).toDataURL(text, { type: 'image/png', errorCorrectionLevel: 'M', margin: 4, scale: 4 })
}

/**
 * The service's address that a link's URLs start with: PUBLIC_URL, or the
 * address the request came to when it is not set.
 */
export function serviceBase (publicUrl: string | null, request: { protocol: string, host: string }): string {
  return publicUrl ?? `${request.protocol}://${request.host}`
}
