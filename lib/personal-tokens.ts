import { randomBytes } from 'node:crypto'

/** What starts a personal access token, so that it is told from an access token (a JWT) at a glance. */
export const PERSONAL_TOKEN_PREFIX = 'cht_'

const PERSONAL_TOKEN = /^cht_[A-Za-z0-9_-]{43}$/

/** A new personal access token: the prefix and 32 random bytes in base64url. */
export function newPersonalToken (): string {
  return PERSONAL_TOKEN_PREFIX + randomBytes(32).toString('base64url')
}

/** A bearer token that is meant as a personal access token (well formed or not). */
export function looksPersonal (token: string): boolean {
  return token.startsWith(PERSONAL_TOKEN_PREFIX)
}

export function wellFormedPersonal (token: string): boolean {
  return PERSONAL_TOKEN.test(token)
}
