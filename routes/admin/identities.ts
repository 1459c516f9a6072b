import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { Db } from '../../db/client'
import { errors } from '../../lib/errors'
import { errorResponses, noContent, operations } from '../../lib/schemas'
import { listIdentities, unlinkIdentity } from '../../sql/oidc'
import { findUser } from '../../sql/users'
import { checkedRedirect, issueLink, providerConfigured } from '../auth/links'
import { ListQuery } from '../me/schemas'
import { AdminIdentityLinkBody, IdentityParams, UserParams } from './schemas'
import { pageOf } from '../list'

/**
 * A user's identities of the identity provider: the link an administrator
 * makes for a person who cannot prove a password (an account without one,
 * or any account while OIDC_ONLY turns password sign-in off), the list, and
 * the removal of a wrong link.
 */
const identities: FastifyPluginAsyncTypebox = async function (fastify) {
  const tags = ['admin']
  const operation = operations(tags)

  async function existing (db: Db, id: number): Promise<void> {
    if (await findUser(db, id) === undefined) throw new errors.notFound('User')
  }

  fastify.post('/api/admin/users/:id/identity-link', {
    schema: operation('createAdminIdentityLink', 'A single-use address that links the identity a person signs in with to a user', {
      description: 'Give the address to the person, who opens it in their browser and signs in at the identity provider: that identity is linked to the user ' +
        '(whatever its e-mail) and the person is signed in. For an account without a password, and for a household under OIDC_ONLY bringing its existing accounts over. ' +
        '`redirect` is the front end\'s page to come back to (default /). The link token lasts 7 days, in any browser, once; only its hash is kept, and a new one replaces the user\'s open one. ' +
        'It opens only while the user is enabled. 404 for an unknown user, or when no provider is configured.',
      params: UserParams, body: AdminIdentityLinkBody,
      response: { 201: Type.Ref('IdentityLink'), ...errorResponses(400, 401, 403, 404) }
    })
  }, async (request, reply) => {
    providerConfigured(fastify)
    const redirect = checkedRedirect(request.body.redirect ?? '/', '/body/redirect')
    await existing(request.db, request.params.id)
    const link = await issueLink(fastify, request.db, { userId: request.params.id, madeBy: 'admin', browser: null, redirect })
    return reply.code(201).header('cache-control', 'no-store').send(link)
  })

  fastify.get('/api/admin/users/:id/identities', {
    schema: operation('listAdminUserIdentities', 'The identities of the identity provider linked to a user', { params: UserParams, querystring: ListQuery, response: { 200: Type.Ref('IdentityList'), ...errorResponses(400, 401, 403, 404) } })
  }, async request => {
    const { id } = request.params
    await existing(request.db, id)
    return await pageOf(request.query, page => listIdentities(request.db, id, page))
  })

  fastify.delete('/api/admin/users/:id/identities/:identityId', {
    schema: operation('deleteAdminUserIdentity', 'Unlink an identity from a user', {
      description: 'Its next sign-in with the provider is a first one again. Sessions already open go on. 404 for an unknown user or an identity not the user\'s.',
      params: IdentityParams,
      response: noContent('Unlinked', 400, 401, 403, 404)
    })
  }, async (request, reply) => {
    const { id, identityId } = request.params
    if (!(await unlinkIdentity(request.db, id, identityId))) throw new errors.notFound('Identity')
    return reply.code(204).send(null)
  })
}

export default identities
