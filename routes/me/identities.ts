import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { errorResponses, operations } from '../../lib/schemas'
import { listIdentities } from '../../sql/oidc'
import { ListQuery } from './schemas'
import { pageOf } from '../list'

/** The identities of the identity provider linked to the user's account; no personal access token reads them. */
const identities: FastifyPluginAsyncTypebox = async function (fastify) {
  const tags = ['me']
  const operation = operations(tags)

  fastify.get('/api/me/identities', {
    config: { personalTokens: 'refused' },
    schema: operation('listMyIdentities', 'The identities of the identity provider linked to the user\'s account', { querystring: ListQuery, response: { 200: Type.Ref('IdentityList'), ...errorResponses(400, 401, 403) } })
  }, async request => {
    return await pageOf(request.query, page => listIdentities(request.db, request.user.id, page))
  })
}

export default identities
