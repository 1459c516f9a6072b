/** A path of the front end on this service's origin: one slash, then no second slash or backslash, no fragment, no spaces. */
const FRONT_END_PATH = /^\/(?![/\\])[^\\#\s\u0000-\u001f\u007f]*$/

const OUTSIDE_ASCII = /[^\x21-\x7e]/gu

function percentEncoded (character: string): string {
  return [...new TextEncoder().encode(character)].map(byte => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join('')
}

/**
 * The front end's path to come back to, as a Location header may carry it:
 * every character outside printable ASCII percent-encoded in UTF-8, and what
 * is encoded already left as it is. Null for anything but such a path.
 */
export function frontEndPath (raw: string): string | null {
  return FRONT_END_PATH.test(raw) ? raw.replace(OUTSIDE_ASCII, percentEncoded) : null
}

/** The address that starts a sign-in with the provider which links the identity to the account of a link token. */
export function linkStartUrl (publicUrl: string, redirect: string, token: string): string {
  return `${publicUrl}/api/auth/oidc/start?${new URLSearchParams({ redirect, link: token }).toString()}`
}
