import { readFileSync } from 'node:fs'
import { ConfigError } from '../lib/config-error'
import { flag, text, type Env } from '../lib/config-readers'

/** Sign-in with the home's identity provider (OpenID Connect), as configured. */
export interface OidcConfig {
  /** The issuer's URL: its discovery document is `<issuer>/.well-known/openid-configuration`. */
  issuer: string
  clientId: string
  clientSecret: string
  /** The scopes asked for, `openid` among them. */
  scopes: string
  /** What the front end calls the provider ("Sign in with …"). */
  name: string
  /** Certificates (PEM) trusted for the provider besides the system's, for a provider under a home CA. */
  ca: string | null
  /** Password logins are off (the first administrator's until an administrator has signed in with the provider). */
  only: boolean
}

const SCOPE = /^[\x21\x23-\x5B\x5D-\x7E]+$/

function issuerUrl (raw: string): string {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new ConfigError('OIDC_ISSUER', `must be a URL like https://auth.example.org, got "${raw}"`)
  }
  if (url.protocol !== 'https:') throw new ConfigError('OIDC_ISSUER', `must be an https: URL (OpenID Connect needs TLS), got "${raw}"`)
  if (url.search !== '' || url.hash !== '') throw new ConfigError('OIDC_ISSUER', `must have no query or fragment, got "${raw}"`)
  return raw
}

function scopes (env: Env): string {
  const raw = text(env, 'OIDC_SCOPES') ?? 'openid email profile'
  const list = raw.split(/\s+/)
  if (!list.every(scope => SCOPE.test(scope))) throw new ConfigError('OIDC_SCOPES', `must be scopes separated by spaces, got "${raw}"`)
  if (!list.includes('openid')) throw new ConfigError('OIDC_SCOPES', `must include openid, got "${raw}"`)
  return list.join(' ')
}

function caFile (env: Env): string | null {
  const file = text(env, 'OIDC_CA_FILE')
  if (file === undefined) return null
  let pem: string
  try {
    pem = readFileSync(file, 'utf8')
  } catch (error) {
    throw new ConfigError('OIDC_CA_FILE', `cannot be read: ${(error as Error).message}`)
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new ConfigError('OIDC_CA_FILE', `holds no PEM certificate: ${file}`)
  return pem
}

/**
 * Reads OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET (all or none),
 * OIDC_SCOPES, OIDC_NAME, OIDC_CA_FILE and OIDC_ONLY; PUBLIC_URL is
 * required with them. Throws ConfigError naming the first bad one.
 */
export function oidcSettings (env: Env, publicUrl: string | null): OidcConfig | null {
  const names = ['OIDC_ISSUER', 'OIDC_CLIENT_ID', 'OIDC_CLIENT_SECRET'] as const
  const given = names.filter(name => text(env, name) !== undefined)
  if (given.length === 0) {
    if (flag(env, 'OIDC_ONLY', false)) throw new ConfigError('OIDC_ONLY', 'needs OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET')
    return null
  }
  const missing = names.find(name => !given.includes(name))
  if (missing !== undefined) throw new ConfigError(missing, `must be set with ${given.join(' and ')}`)
  if (publicUrl === null) throw new ConfigError('PUBLIC_URL', 'is required with OIDC_ISSUER: the provider sends the browser back to <PUBLIC_URL>/api/auth/oidc/callback')
  const issuer = issuerUrl(text(env, 'OIDC_ISSUER') as string)
  return {
    issuer,
    clientId: text(env, 'OIDC_CLIENT_ID') as string,
    // A secret is taken as given, never trimmed.
    clientSecret: env.OIDC_CLIENT_SECRET as string,
    scopes: scopes(env),
    name: text(env, 'OIDC_NAME') ?? new URL(issuer).host,
    ca: caFile(env),
    only: flag(env, 'OIDC_ONLY', false)
  }
}
