import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Db } from '../../db/client'
import { Type } from '@sinclair/typebox'
import { errors } from '../../lib/errors'
import { errorResponses, noContent, operations } from '../../lib/schemas'
import { callerOf } from '../../plugins/access'
import type { Caller } from '../../sql/access'
import { activeSessions, revokeOwnSession } from '../../sql/sessions'
import { beginChange } from '../../sql/changes'
import { membershipsOf } from '../../sql/families'
import { emailTaken, findProfile, findUser, updateProfile } from '../../sql/users'
import { timeZoneKnown } from '../../sql/notifications'
import { zoneInIntl } from '../../lib/preferences'
import { invalidRequest } from '../../lib/errors'
import { ListQuery, PatchMeBody, SessionParams } from './schemas'
import identities from './identities'
import personalTokens from './tokens'
import { pageOf } from '../list'

const operation = operations(['me'])

const me: FastifyPluginAsyncTypebox = async function (fastify) {
  // The account itself is out of any personal access token's reach.
  const config = { personalTokens: 'refused' as const }
  await fastify.register(personalTokens)
  await fastify.register(identities)

  /** The user, and the families the request may see: a personal access token bound to a family sees that one. */
  async function profile (db: Db, caller: Caller) {
    const user = await findProfile(db, caller.userId)
    if (user === undefined) throw new errors.unauthorized('The account no longer exists')
    const families = await membershipsOf(db, caller)
    return { ...user, families }
  }

  fastify.get('/api/me', {
    schema: operation('getMe', 'The signed-in user and their families', { response: { 200: Type.Ref('Me'), ...errorResponses(401, 403) } })
  }, async request => profile(request.db, callerOf(request.user)))

  // A new e-mail answers whether another account has it (409): it is limited like registering, per address and per account.
  const emailChangesByAddress = fastify.authLimit('email-change-address', request => request.ip)
  const emailChangesByAccount = fastify.authLimit('email-change-account', request => String(request.user.id))

  fastify.patch('/api/me', {
    config,
    preHandler: async request => {
      const zone = request.body.preferences?.timeZone
      if (zone !== undefined && !(zoneInIntl(zone) && await timeZoneKnown(request.db, zone))) {
        throw invalidRequest([{ path: '/body/preferences/timeZone', message: 'must be an IANA time zone, e.g. Europe/Berlin' }])
      }
      const { email } = request.body
      if (email === undefined) return
      const current = await findUser(request.db, request.user.id)
      if (current === undefined || current.email === email) return
      await emailChangesByAddress(request)
      await emailChangesByAccount(request)
    },
    schema: operation('updateMe', 'Change one\'s name, e-mail or preferences', {
      description: 'A request whose email differs from the account\'s is limited like registering: AUTH_RATE_LIMIT_MAX a window per client address and per account, refused ones included (409 EMAIL_TAKEN among them); beyond, 429 with Retry-After. ' +
        'A change of the name alone, or the same e-mail again, is not counted. ' +
        'Preferences left out of `preferences` are kept; a time zone that is not an IANA name is a 400. Answers the user as GET /api/me does.',
      body: PatchMeBody,
      response: { 200: Type.Ref('Me'), ...errorResponses(400, 401, 403, 409, 429) }
    })
  }, async request => {
    const { id } = request.user
    return request.db.begin(async tx => {
      await beginChange(tx, null, id)
      if (request.body.email !== undefined && await emailTaken(tx, request.body.email, id)) throw new errors.emailTaken()
      await updateProfile(tx, id, request.body)
      return await profile(tx, callerOf(request.user))
    })
  })

  fastify.get('/api/me/sessions', {
    config,
    schema: operation('listMySessions', 'The user\'s active sessions', { querystring: ListQuery, response: { 200: Type.Ref('SessionList'), ...errorResponses(400, 401, 403) } })
  }, async request => {
    return await pageOf(request.query, async page => {
      const { rows, total } = await activeSessions(request.db, request.user.id, page)
      return { rows: rows.map(session => ({ ...session, current: session.id === request.user.sessionId })), total }
    })
  })

  fastify.delete('/api/me/sessions/:id', {
    config,
    schema: operation('deleteMySession', 'End one of the user\'s sessions', { params: SessionParams, response: noContent('Ended', 400, 401, 403, 404) })
  }, async (request, reply) => {
    if (!(await revokeOwnSession(request.db, request.user.id, request.params.id))) throw new errors.notFound('Session')
    return reply.code(204).send(null)
  })
}

export default me
