import { rootCertificates } from 'node:tls'
import type * as Client from 'openid-client'
import type * as Undici from 'undici'
import type { OidcConfig } from '../io/oidc-config'

/** Why a sign-in with the provider failed, as the callback tells the front end. */
export type OidcFailure =
  /** The provider answered the authorization with an error: the person refused, or could not sign in. */
  | 'OIDC_DENIED'
  /** The code exchange failed, or the id token failed a check: signature, issuer, audience, expiry, nonce. */
  | 'OIDC_TOKEN_INVALID'
  /** The provider could not be reached, or did not answer in time. */
  | 'OIDC_PROVIDER_UNAVAILABLE'

export class OidcError extends Error {
  constructor (readonly code: OidcFailure, cause: unknown) {
    super(`${code}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause })
    this.name = 'OidcError'
  }
}

/** Who the provider says signed in, from the checked id token (and the UserInfo endpoint for what it lacks). */
export interface ProviderIdentity {
  issuer: string
  subject: string
  email: string | null
  emailVerified: boolean
  name: string | null
}

/** What a flow's callback checks: kept by the service between the start and the callback. */
export interface FlowChecks {
  state: string
  nonce: string
  codeVerifier: string
}

/** How long one request to the provider may take, in seconds. */
const TIMEOUT = 10

/**
 * openid-client, loaded when a provider is first used: a service without
 * OIDC_ISSUER never loads it.
 */
function openid (): typeof Client {
  return require('openid-client') as typeof Client
}

function failure (error: unknown): OidcError {
  if (error instanceof OidcError) return error
  const client = openid()
  if (error instanceof client.AuthorizationResponseError) return new OidcError('OIDC_DENIED', error)
  const code = (error as { code?: unknown }).code
  if (error instanceof client.ResponseBodyError || (typeof code === 'string' && code.startsWith('OAUTH_'))) return new OidcError('OIDC_TOKEN_INVALID', error)
  return new OidcError('OIDC_PROVIDER_UNAVAILABLE', error)
}

function text (value: unknown): string | null {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : null
}

/**
 * The home's identity provider, through openid-client: the authorization
 * code flow with PKCE (S256), state and nonce, and the id token checked
 * (its signature against the issuer's published keys, iss, aud, exp, nonce).
 * The discovery document is read once, and again after a failure.
 */
export class OidcProvider {
  /** The redirect URI registered with the provider. */
  readonly callbackUrl: string
  private configuration: Promise<Client.Configuration> | null = null
  private readonly fetch: Client.CustomFetch | undefined
  private readonly dispatcher: Undici.Agent | null = null

  constructor (private readonly settings: OidcConfig, publicUrl: string) {
    this.callbackUrl = `${publicUrl}/api/auth/oidc/callback`
    if (settings.ca !== null) {
      // The system's certificates and the configured ones, for a provider under a home CA.
      const { Agent, fetch: agentFetch } = require('undici') as typeof Undici
      const dispatcher = new Agent({ connect: { ca: [...rootCertificates, settings.ca] } })
      this.dispatcher = dispatcher
      this.fetch = (url, options) => agentFetch(url, { ...options, dispatcher } as never) as unknown as Promise<Response>
    }
  }

  /** Closes the connections to the provider. */
  async close (): Promise<void> {
    await this.dispatcher?.close()
  }

  static newChecks (): FlowChecks {
    const client = openid()
    return { state: client.randomState(), nonce: client.randomNonce(), codeVerifier: client.randomPKCECodeVerifier() }
  }

  /** The provider's configuration; any failure to read it is the provider's being unavailable. */
  private async discovered (): Promise<Client.Configuration> {
    try {
      return await this.discovery()
    } catch (error) {
      throw new OidcError('OIDC_PROVIDER_UNAVAILABLE', error)
    }
  }

  private discovery (): Promise<Client.Configuration> {
    if (this.configuration === null) {
      const client = openid()
      const found = client.discovery(new URL(this.settings.issuer), this.settings.clientId, undefined, client.ClientSecretBasic(this.settings.clientSecret), {
        timeout: TIMEOUT,
        execute: [client.enableNonRepudiationChecks],
        ...(this.fetch === undefined ? {} : { [client.customFetch]: this.fetch })
      })
      found.catch(() => { if (this.configuration === found) this.configuration = null })
      this.configuration = found
    }
    return this.configuration
  }

  /** Where to send the browser to sign in. */
  async authorizationUrl (checks: FlowChecks): Promise<string> {
    try {
      const configuration = await this.discovered()
      const client = openid()
      return client.buildAuthorizationUrl(configuration, {
        redirect_uri: this.callbackUrl,
        scope: this.settings.scopes,
        state: checks.state,
        nonce: checks.nonce,
        code_challenge: await client.calculatePKCECodeChallenge(checks.codeVerifier),
        code_challenge_method: 'S256'
      }).href
    } catch (error) {
      throw failure(error)
    }
  }

  /**
   * Finishes a flow from the query string the provider sent the browser back
   * with: the code exchanged and the id token checked. Throws OidcError.
   */
  async identify (search: string, checks: FlowChecks): Promise<ProviderIdentity> {
    try {
      const configuration = await this.discovered()
      const client = openid()
      const tokens = await client.authorizationCodeGrant(configuration, new URL(this.callbackUrl + search), {
        pkceCodeVerifier: checks.codeVerifier,
        expectedState: checks.state,
        expectedNonce: checks.nonce,
        idTokenExpected: true
      })
      const claims = tokens.claims()
      if (claims === undefined) throw new OidcError('OIDC_TOKEN_INVALID', 'no id token')
      let found: Record<string, unknown> = claims
      // Some providers (Authelia among them) give the e-mail only at the UserInfo endpoint.
      if (text(claims.email) === null && configuration.serverMetadata().userinfo_endpoint !== undefined) {
        found = { ...(await client.fetchUserInfo(configuration, tokens.access_token, claims.sub)), ...claims }
      }
      return {
        issuer: claims.iss,
        subject: claims.sub,
        email: text(found.email),
        emailVerified: found.email_verified === true,
        name: text(found.name) ?? text(found.preferred_username)
      }
    } catch (error) {
      throw failure(error)
    }
  }
}
