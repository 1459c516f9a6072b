import { Type } from '@sinclair/typebox'

/** The longest host name DNS carries. */
const MAX_HOST_LENGTH = 253

/**
 * What keeps a text from being a URL the service sends to, or null: it must
 * parse as the WHATWG URL parser (the one that sends) reads it, be http or
 * https, hold no control character, and have a host of plain characters (no
 * percent-encoded ones) that DNS can carry.
 */
export function httpUrlProblem (text: string): string | null {
  if (/[\u0000-\u001f\u007f]/.test(text)) return 'must not contain control characters'
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return 'must be a URL'
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http or https URL'
  if (/[%\s\u0000-\u001f\u007f]/.test(url.hostname)) return 'must have a host without control or percent-encoded characters'
  if (url.hostname.length > MAX_HOST_LENGTH) return `must have a host of at most ${MAX_HOST_LENGTH} characters`
  return null
}

/** The outbound rule in a sentence, for the descriptions of the fields it applies to. */
export const OUTBOUND_RULE = 'Its address, written so or resolved so, follows the outbound rule: multicast, broadcast and reserved addresses are refused; ' +
  'loopback, link-local, private networks (10/8, 172.16/12, 192.168/16, fc00::/7), the shared address space (100.64/10) and the service\'s own addresses ' +
  'are refused unless the service runs with WEBHOOK_ALLOW_PRIVATE=true; an IPv6 address that carries an IPv4 address (::ffff:0:0/96, 64:ff9b::/96, ::/96, 2002::/16) is judged as that address. ' +
  'A URL with control characters, or one the WHATWG URL parser cannot read, is a 400'

/** The schema of a URL the service sends to (webhooks, ntfy topics, push endpoints): every one it accepts is one the sender parses. */
export function HttpUrl (description: string, maxLength = 2000) {
  return Type.String({ format: 'uri', maxLength, pattern: '^[Hh][Tt][Tt][Pp][Ss]?://', 'x-http-url': true, description })
}
