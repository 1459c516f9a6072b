import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { errors, invalidRequest } from '../../lib/errors'
import { newPersonalToken } from '../../lib/personal-tokens'
import { errorResponses, noContent, operations } from '../../lib/schemas'
import { deletePersonalToken, insertPersonalToken, listPersonalTokens, lockTokenCount } from '../../sql/sessions'
import { CreateTokenBody, ListQuery, TokenParams } from './schemas'
import { pageOf } from '../list'

/** How many personal access tokens a user may have. */
export const TOKENS_PER_USER = 50

/**
 * The user's personal access tokens: bearer tokens for scripts and home
 * automation, each limited to reading or writing and, if one is named, to one
 * family. Only a hash of each is kept. No token reaches these routes.
 */
const personalTokens: FastifyPluginAsyncTypebox = async function (fastify) {
  const { tokens } = fastify
  const tags = ['me']
  const operation = operations(tags)
  const config = { personalTokens: 'refused' as const }

  fastify.post('/api/me/tokens', {
    config,
    preHandler: fastify.familyScope({ target: { family: 'body.familyId' }, role: 'viewer', whenAbsent: 'skip' }),
    schema: operation('createPersonalToken', 'A personal access token, shown once', {
      description: 'Send it as `Authorization: Bearer cht_...`, like an access token. A `read` token gets 403 on every POST, PUT, PATCH and DELETE ' +
        '(but event tickets, which only read); a token with `familyId` sees that family alone, as if the user were a member of no other ' +
        '(another family\'s data is a 403, and lists of families show that one). No token reaches administration, the account (password, profile, sessions), ' +
        'logout, invite acceptance or these routes (403); a token with `familyId` cannot create or import a family either. ' +
        '`familyId` must be a family of the user\'s (404 for none, 403 for another\'s). `expiresAt` must be in the future; without it the token lasts until deleted. ' +
        'A token stops working at once when deleted, expired, its family deleted or its account disabled; a password change does not end it. ' +
        `A user has at most ${TOKENS_PER_USER} tokens (409 CONFLICT beyond).`,
      body: CreateTokenBody,
      response: { 201: Type.Ref('CreatedPersonalToken'), ...errorResponses(400, 401, 403, 404, 409) }
    })
  }, async (request, reply) => {
    const { name, scope, familyId, expiresAt } = request.body
    if (expiresAt != null && Date.parse(expiresAt) <= Date.now()) {
      throw invalidRequest([{ path: '/body/expiresAt', message: 'must be in the future' }])
    }
    const userId = request.user.id
    const token = newPersonalToken()
    const created = await request.db.begin(async tx => {
      if (await lockTokenCount(tx, userId) >= TOKENS_PER_USER) {
        throw new errors.conflict(`A user may have at most ${TOKENS_PER_USER} personal access tokens: delete one first`)
      }
      return insertPersonalToken(tx, { userId, name, scope, familyId: familyId ?? null, tokenHash: tokens.hash(token), expiresAt: expiresAt ?? null })
    })
    return reply.code(201).header('cache-control', 'no-store').send({ ...created, token })
  })

  fastify.get('/api/me/tokens', {
    config,
    schema: operation('listPersonalTokens', 'The user\'s personal access tokens, without the tokens', {
      description: 'Expired ones too, until deleted. `lastUsedAt` moves at most once a minute.',
      querystring: ListQuery,
      response: { 200: Type.Ref('PersonalTokenList'), ...errorResponses(400, 401, 403) }
    })
  }, async request => {
    return await pageOf(request.query, page => listPersonalTokens(request.db, request.user.id, page))
  })

  fastify.delete('/api/me/tokens/:id', {
    config,
    schema: operation('deletePersonalToken', 'Delete one of the user\'s personal access tokens', { description: 'It is refused on its next request, on every instance.', params: TokenParams, response: noContent('Deleted', 400, 401, 403, 404) })
  }, async (request, reply) => {
    if (!(await deletePersonalToken(request.db, request.user.id, request.params.id))) throw new errors.notFound('Personal access token')
    return reply.code(204).send(null)
  })
}

export default personalTokens
