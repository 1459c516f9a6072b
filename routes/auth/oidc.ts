import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from '@sinclair/typebox'
import { randomBytes } from 'node:crypto'
import { accountOf, linkedAccount } from '../../domain/accounts'
import { errors } from '../../lib/errors'
import { OidcError, OidcProvider } from '../../outbound/oidc'
import { errorResponses, operations } from '../../lib/schemas'
import { findOpenLink } from '../../sql/identity-links'
import { insertCode, insertFlow, takeCode, takeFlow } from '../../sql/oidc'
import { findCredentialsById } from '../../sql/users'
import { browserOf, browserOrNew, keepBrowser } from './browser'
import { checkedRedirect, providerConfigured } from './links'
import { OidcCallbackQuery, OidcExchangeBody, OidcStartQuery, Redirect } from './schemas'
import { startSession } from './session'

/** How long a sign-in may take at the provider, in seconds. */
const FLOW_TTL = 600
/** How long the front end has to exchange its one-time code, in seconds. */
const CODE_TTL = 60

/**
 * Sign-in with the home's identity provider: the authorization code flow
 * with PKCE, state and nonce (outbound/oidc.ts). The flow is kept in the
 * database, so that any instance finishes it; the front end gets a one-time
 * code in the URL's fragment and exchanges it for the usual token pair, so
 * that no token travels in a URL.
 */
const oidc: FastifyPluginAsyncTypebox = async function (fastify) {
  const { config, tokens } = fastify
  const settings = config.oidc
  // PUBLIC_URL is set whenever a provider is (io/oidc-config.ts).
  const publicUrl = config.publicUrl ?? ''
  const provider = settings === null ? null : new OidcProvider(settings, publicUrl)
  if (provider !== null) fastify.addHook('onClose', async () => { await provider.close() })
  const limited = { rateLimit: {} }
  const tags = ['auth']
  const operation = operations(tags, [])

  function configured (): OidcProvider {
    providerConfigured(fastify)
    return provider as OidcProvider
  }

  /** Whether a link token may start a sign-in in this browser: open, of an enabled user, and the user's own only in the browser that asked for it. */
  async function linkOpens (linkHash: string, request: FastifyRequest): Promise<boolean> {
    const link = await findOpenLink(request.db, linkHash)
    if (link === undefined || link.disabled) return false
    const browser = browserOf(request)
    return link.browserHash === null || (browser !== null && tokens.hash(browser) === link.browserHash)
  }

  /** Back to the front end, with the one-time code or the reason sign-in failed in the fragment. */
  function back (reply: FastifyReply, redirect: string, fragment: string): FastifyReply {
    return reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer').redirect(`${publicUrl}${redirect}#${fragment}`, 302)
  }

  fastify.get('/api/auth/oidc', {
    schema: operation('getOidcSettings', 'Whether sign-in with the identity provider is on, and password sign-in', { response: { 200: Type.Ref('OidcSettings'), ...errorResponses() } })
  }, async () => ({ enabled: settings !== null, name: settings?.name ?? null, passwordLogin: settings?.only !== true }))

  fastify.get('/api/auth/oidc/start', {
    config: limited,
    schema: operation('startOidcSignIn', 'Begin sign-in with the identity provider (a page the browser opens)', {
      description: 'Answers 302 to the provider\'s authorization endpoint, with PKCE (S256), state and nonce, and a cookie that binds the sign-in to this browser. ' +
        'The provider sends the browser back to /api/auth/oidc/callback, which answers 302 to PUBLIC_URL + redirect + `#oidcCode=<code>`, or `#oidcError=<CODE>`. ' +
        'Characters of the redirect outside printable ASCII come back percent-encoded in UTF-8 (`/a中` as `/a%E4%B8%AD`); what is percent-encoded already is left as it is. ' +
        'With `link`, the identity the person signs in with is linked to the link token\'s account; a link token that is unknown, expired or used, of a disabled account, ' +
        'or a user\'s own opened in another browser than the one that asked for it: 302 to PUBLIC_URL + redirect + `#oidcError=OIDC_LINK_INVALID`. ' +
        'When the provider cannot be reached, 302 to PUBLIC_URL + redirect + `#oidcError=OIDC_PROVIDER_UNAVAILABLE`. ' +
        '404 when no provider is configured. Limited like a login: AUTH_RATE_LIMIT_MAX requests a window per client address.',
      querystring: OidcStartQuery,
      response: { 302: Redirect, ...errorResponses(400, 404, 429) }
    })
  }, async (request, reply) => {
    const found = configured()
    const redirect = checkedRedirect(request.query.redirect, '/query/redirect')
    const { link } = request.query
    const linkHash = link === undefined ? null : tokens.hash(link)
    if (linkHash !== null && !(await linkOpens(linkHash, request))) return back(reply, redirect, 'oidcError=OIDC_LINK_INVALID')
    const checks = OidcProvider.newChecks()
    let location: string
    try {
      location = await found.authorizationUrl(checks)
    } catch (error) {
      if (!(error instanceof OidcError)) throw error
      request.log.warn({ err: error }, 'the identity provider could not be reached')
      return back(reply, redirect, `oidcError=${error.code}`)
    }
    const browser = browserOrNew(request)
    await insertFlow(request.db, {
      stateHash: tokens.hash(checks.state),
      browserHash: tokens.hash(browser),
      codeVerifier: checks.codeVerifier,
      nonce: checks.nonce,
      redirect,
      linkHash
    }, FLOW_TTL)
    return keepBrowser(reply, publicUrl, browser, FLOW_TTL)
      .header('cache-control', 'no-store')
      .redirect(location, 302)
  })

  fastify.get('/api/auth/oidc/callback', {
    config: limited,
    schema: operation('finishOidcSignIn', 'Where the identity provider sends the browser back (the redirect URI to register)', {
      description: 'Register `<PUBLIC_URL>/api/auth/oidc/callback` with the provider. Answers 302 to PUBLIC_URL + the start\'s redirect + `#oidcCode=<code>`, ' +
        'a one-time code for POST /api/auth/oidc/exchange, good for 60 s; or + `#oidcError=<CODE>`: OIDC_DENIED (the provider refused), ' +
        'OIDC_TOKEN_INVALID (the code exchange or the id token\'s checks failed: signature, iss, aud, exp, nonce), OIDC_PROVIDER_UNAVAILABLE, ' +
        'REGISTRATION_CLOSED (no account matches and REGISTRATION is not open), ACCOUNT_DISABLED, ' +
        'ACCOUNT_EXISTS (a first sign-in whose e-mail, verified or not, in any case, is an existing account\'s: that account links the identity first), ' +
        'OIDC_EMAIL_MISSING (a new account needs an e-mail); after a start with `link`: OIDC_LINK_INVALID (the link token expired, was used meanwhile, or its account was disabled or deleted) ' +
        'and IDENTITY_TAKEN (the identity is linked to another account; nothing changed, the link token stays good). ' +
        'An unknown, used or expired state, or one started in another browser, answers 302 to `<PUBLIC_URL>/#oidcError=OIDC_STATE_INVALID`. ' +
        'A user is found by the provider\'s issuer and subject, never by an e-mail; a first sign-in of an e-mail no account has follows REGISTRATION (the first user of the service becomes admin). ' +
        'After a start with `link`, the identity is linked to the link token\'s account (the e-mail plays no part), the token is used up, and the code signs in to that account.',
      querystring: OidcCallbackQuery,
      response: { 302: Redirect, ...errorResponses(400, 404, 429) }
    })
  }, async (request, reply) => {
    const found = configured()
    const { state } = request.query
    const browser = browserOf(request)
    const flow = state === undefined || browser === null ? undefined : await takeFlow(request.db, tokens.hash(state), tokens.hash(browser))
    if (flow === undefined || state === undefined) return back(reply, '/', 'oidcError=OIDC_STATE_INVALID')
    const query = request.url.slice(request.url.indexOf('?'))
    let identity
    try {
      identity = await found.identify(query, { state, nonce: flow.nonce, codeVerifier: flow.codeVerifier })
    } catch (error) {
      if (!(error instanceof OidcError)) throw error
      request.log.info({ err: error }, 'a sign-in with the identity provider failed')
      return back(reply, flow.redirect, `oidcError=${error.code}`)
    }
    const { linkHash } = flow
    const signedIn = await request.db.begin(async (tx): Promise<{ userId: number } | { refused: string }> =>
      linkHash === null ? accountOf(tx, identity, config.registration) : linkedAccount(tx, identity, linkHash))
    if ('refused' in signedIn) return back(reply, flow.redirect, `oidcError=${signedIn.refused}`)
    const code = randomBytes(32).toString('base64url')
    await insertCode(request.db, tokens.hash(code), signedIn.userId, CODE_TTL)
    return back(reply, flow.redirect, `oidcCode=${code}`)
  })

  fastify.post('/api/auth/oidc/exchange', {
    config: limited,
    schema: operation('exchangeOidcCode', 'Trade the one-time code of a sign-in with the identity provider for a token pair', {
      description: `Within ${CODE_TTL} s of the sign-in, and once: a used, expired or unknown code is 400 OIDC_CODE_INVALID. A disabled account: 403 ACCOUNT_DISABLED. ` +
        'Limited like a login: AUTH_RATE_LIMIT_MAX requests a window per client address.',
      body: OidcExchangeBody,
      response: { 200: Type.Ref('TokenPair'), ...errorResponses(400, 403, 429) }
    })
  }, async request => {
    const userId = await takeCode(request.db, tokens.hash(request.body.code))
    const account = userId === undefined ? undefined : await findCredentialsById(request.db, userId)
    if (account === undefined) throw new errors.oidcCodeInvalid()
    if (account.disabled) throw new errors.accountDisabled()
    const { passwordHash: _hash, disabled: _disabled, ...user } = account
    return request.db.begin(tx => startSession(fastify, tx, request, user))
  })
}

export default oidc
