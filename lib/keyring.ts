import { createHash } from 'node:crypto'
import { createDecoder, createSigner, createVerifier } from 'fast-jwt'

/** The name of a secret in a token's `kid`: part of its hash, which tells the secret apart without giving it away. */
export function keyId (secret: string): string {
  return createHash('sha256').update(secret).digest('hex').slice(0, 16)
}

type Claims = Record<string, unknown>
type Verify = (token: string) => Claims

const decodeComplete = createDecoder({ complete: true })

/** The error of a token signed with a secret the service does not know. */
export class UnknownKeyError extends Error {
  readonly code = 'FAST_JWT_INVALID_KEY'
}

/**
 * The secrets of one kind of token: the current one signs, and a previous
 * one (during a rotation) still verifies. Each token names its secret in
 * `kid`; one without (signed before tokens carried it) is tried against both.
 * HS256 only.
 */
/** Tokens verified lately: a client sends the same one with each request until it expires. */
const KEPT_TOKENS = 10_000

export class Keyring {
  private readonly verifiers = new Map<string, Verify>()
  private readonly verified = new Map<string, Claims>()
  readonly sign: (payload: Claims) => string

  constructor (current: string, previous: string | null, expiresInSeconds: number) {
    const kid = keyId(current)
    this.sign = createSigner({ key: current, algorithm: 'HS256', expiresIn: expiresInSeconds * 1000, kid })
    this.verifiers.set(kid, createVerifier({ key: current, algorithms: ['HS256'] }))
    if (previous !== null) this.verifiers.set(keyId(previous), createVerifier({ key: previous, algorithms: ['HS256'] }))
  }

  /**
   * The token's claims, when its secret, signature and lifetime are good;
   * otherwise throws fast-jwt's error. A token verified before is known by
   * its whole text, signature included, until it expires.
   */
  verify (token: string): Claims {
    const known = this.verified.get(token)
    if (known !== undefined && typeof known.exp === 'number' && known.exp * 1000 > Date.now()) return known
    const claims = this.check(token)
    if (this.verified.size >= KEPT_TOKENS) this.verified.delete(this.verified.keys().next().value as string)
    this.verified.set(token, claims)
    return claims
  }

  private check (token: string): Claims {
    const { header } = decodeComplete(token) as { header: { kid?: unknown } }
    if (typeof header.kid === 'string') {
      const verify = this.verifiers.get(header.kid)
      if (verify === undefined) throw new UnknownKeyError('The token was signed with an unknown secret')
      return verify(token)
    }
    let failure: unknown
    for (const verify of this.verifiers.values()) {
      try {
        return verify(token)
      } catch (error) {
        // An expired token is expired whatever else is tried.
        if (String((error as { code?: string }).code).includes('EXPIRED')) throw error
        failure ??= error
      }
    }
    throw failure
  }
}
