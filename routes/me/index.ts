import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { errors } from '../../lib/errors'
import { errorResponses } from '../../lib/schemas'
import { hashPassword, passwordKey, verifyPassword } from '../../lib/passwords'
import { activeSessions, revokeOwnSession, revokeUserSessions } from '../../sql/sessions'
import { beginChange } from '../../sql/changes'
import { membershipsOf } from '../../sql/families'
import { emailTaken, findCredentialsById, findUser, setPasswordHash, updateProfile } from '../../sql/users'
import { ListQuery, PasswordBody, PatchMeBody, SessionParams } from './schemas'

const me: FastifyPluginAsyncTypebox = async function (fastify) {
  const { config, sql } = fastify
  const bearer = [{ bearer: [] }]

  async function profile (userId: number) {
    const user = await findUser(sql, userId)
    if (user === undefined) throw new errors.unauthorized('The account no longer exists')
    const families = await membershipsOf(sql, userId)
    return { ...user, families }
  }

  fastify.get('/api/me', {
    schema: {
      operationId: 'getMe',
      tags: ['me'],
      summary: 'The signed-in user and their families',
      security: bearer,
      response: { 200: Type.Ref('Me'), ...errorResponses(401, 403) }
    }
  }, async request => profile(request.user.id))

  fastify.patch('/api/me', {
    schema: {
      operationId: 'updateMe',
      tags: ['me'],
      summary: 'Change one\'s name or e-mail',
      security: bearer,
      body: PatchMeBody,
      response: { 200: Type.Ref('User'), ...errorResponses(400, 401, 403, 409) }
    }
  }, async request => {
    const { id } = request.user
    return sql.begin(async tx => {
      await beginChange(tx, null, id)
      if (request.body.email !== undefined && await emailTaken(tx, request.body.email, id)) throw new errors.emailTaken()
      return updateProfile(tx, id, request.body)
    })
  })

  fastify.post('/api/me/password', {
    schema: {
      operationId: 'changePassword',
      tags: ['me'],
      summary: 'Change one\'s password',
      description: 'Every other session of the user is revoked. Passwords are checked in turns between accounts; an account with two checks waiting or running gets a 429 with Retry-After for a third.',
      security: bearer,
      body: PasswordBody,
      response: { 204: Type.Null({ description: 'Changed' }), ...errorResponses(400, 401, 403, 429) }
    }
  }, async (request, reply) => {
    const { id, sessionId } = request.user
    const account = await findCredentialsById(sql, id)
    if (account === undefined || !(await verifyPassword(request.body.currentPassword, account.passwordHash, passwordKey.user(id)))) {
      throw new errors.wrongPassword()
    }
    const passwordHash = await hashPassword(request.body.newPassword, config.bcryptCost, passwordKey.user(id))
    await sql.begin(async tx => {
      await setPasswordHash(tx, id, passwordHash)
      await revokeUserSessions(tx, id, sessionId)
    })
    return reply.code(204).send(null)
  })

  fastify.get('/api/me/sessions', {
    schema: {
      operationId: 'listMySessions',
      tags: ['me'],
      summary: 'The user\'s active sessions',
      security: bearer,
      querystring: ListQuery,
      response: { 200: Type.Ref('SessionList'), ...errorResponses(400, 401, 403) }
    }
  }, async request => {
    const { limit = 50, offset = 0 } = request.query
    const { rows, total } = await activeSessions(sql, request.user.id, limit, offset)
    const data = rows.map(({ id, createdAt, lastUsedAt, userAgent }) => ({
      id, createdAt, lastUsedAt, userAgent, current: id === request.user.sessionId
    }))
    return { data, meta: { total, limit, offset } }
  })

  fastify.delete('/api/me/sessions/:id', {
    schema: {
      operationId: 'deleteMySession',
      tags: ['me'],
      summary: 'End one of the user\'s sessions',
      security: bearer,
      params: SessionParams,
      response: { 204: Type.Null({ description: 'Ended' }), ...errorResponses(400, 401, 403, 404) }
    }
  }, async (request, reply) => {
    if (!(await revokeOwnSession(sql, request.user.id, request.params.id))) throw new errors.notFound('Session')
    return reply.code(204).send(null)
  })
}

export default me
