import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { onRequestHookHandler } from 'fastify'
import { errors } from '../../lib/errors'
import { errorResponses, operations } from '../../lib/schemas'
import { browserOrNew, keepBrowser } from '../auth/browser'
import { checkedRedirect, issueLink, LINK_TTL, providerConfigured } from '../auth/links'
import { proveCurrentPassword } from './password-proof'
import { IdentityLinkBody } from './schemas'

/**
 * The link of an identity of the identity provider that users make
 * themselves, from a session and with the password: it checks the password
 * with the password change's hooks (./password-proof.ts), in the same counts.
 */
const identityLink: FastifyPluginAsyncTypebox<{ checks: onRequestHookHandler[] }> = async function (fastify, { checks }) {
  const { config } = fastify
  const tags = ['me']
  const operation = operations(tags)

  fastify.post('/api/me/identities/link', {
    // It waits on more than the database (the password check): its key is not held in a transaction.
    config: { idempotency: 'apart', personalTokens: 'refused' },
    onRequest: checks,
    schema: operation('linkMyIdentity', 'Start linking an identity of the identity provider to one\'s account, proving the password', {
      description: 'Answers the address the browser opens, with a one-time link token: signing in at the provider from there links that identity to this account ' +
        '(whatever its e-mail) and signs in as usual (`#oidcCode=`). The token lasts 10 minutes, is used once, and works only in the browser that asked for it: ' +
        'the answer sets the `oidc_browser` cookie, so open the address in the same browser. A new one replaces the open one. ' +
        'A wrong currentPassword is 403 WRONG_PASSWORD; an account without a password (made by the provider) is 409 PASSWORD_NOT_SET: an administrator makes its link. ' +
        '404 when no provider is configured. A session only: no personal access token (403). ' +
        'Limited like a password change, in the same counts: AUTH_RATE_LIMIT_MAX requests a window per client address and per account; beyond, 429 with Retry-After.',
      body: IdentityLinkBody,
      response: { 201: Type.Ref('IdentityLink'), ...errorResponses(400, 401, 403, 404, 409, 429) }
    })
  }, async (request, reply) => {
    providerConfigured(fastify)
    const redirect = checkedRedirect(request.body.redirect, '/body/redirect')
    const userId = request.user.id
    await proveCurrentPassword(request.db, userId, request.body.currentPassword, () => new errors.passwordNotSet())
    const browser = browserOrNew(request)
    const link = await issueLink(fastify, request.db, { userId, madeBy: 'user', browser, redirect })
    return keepBrowser(reply, config.publicUrl ?? '', browser, LINK_TTL.user).code(201).header('cache-control', 'no-store').send(link)
  })
}

export default identityLink
