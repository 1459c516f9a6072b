import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply } from 'fastify'
import { Type } from '@sinclair/typebox'
import { randomBytes } from 'node:crypto'
import type { Db, Tx } from '../../db/client'
import { lockedStanding, losesLastOwner } from '../../domain/families'
import { errors, found } from '../../lib/errors'
import { clockTag, noneMatch } from '../../lib/etag'
import { CLOCK_ETAG, ConditionalWrite, ITEM_ETAG, conditionalRead, errorResponses, noContent, operations } from '../../lib/schemas'
import { callerOf, notModified, preconditionFailed } from '../../plugins/access'
import { beginChange, beginFamilyChange, familyClock, membershipClock } from '../../sql/changes'
import {
  addMember, deleteEmptyFamily, findFamily, insertFamily, isMemberByEmail, listFamiliesOf, listMembers,
  removeMember, renameFamily, setMemberRole
} from '../../sql/families'
import { createInvite, listOpenInvites, revokeInvite } from '../../sql/invites'
import {
  FamilyBody, FamilyParams, InviteBody, InviteParams, ListQuery, MemberBody, MemberParams
} from './schemas'
import { historyRoute } from '../history'
import importRoute from './import-route'
import { pageOf } from '../list'

const families: FastifyPluginAsyncTypebox = async function (fastify) {
  const { tokens } = fastify
  const tags = ['families']
  const operation = operations(tags)
  await fastify.register(importRoute)
  const family = (role?: 'owner') => fastify.familyScope({ target: { family: 'params.id' }, role })

  /** Starts a write of the family: its clock is held from here, and If-Match is checked against its version. */
  async function beginFamilyWrite (tx: Tx, familyId: number, userId: number, expectedVersion: number | null): Promise<void> {
    await beginFamilyChange(tx, familyId, userId)
    const clock = await familyClock(tx, familyId)
    if (clock === undefined) throw new errors.notFound('Family')
    if (expectedVersion !== null && clock.version !== expectedVersion) throw preconditionFailed(clock.version)
  }

  const familyFor = async (db: Db, userId: number, familyId: number) => found(await findFamily(db, userId, familyId), 'Family')

  fastify.get('/api/families', {
    schema: operation('listFamilies', 'The families the caller belongs to', { querystring: ListQuery, ...conditionalRead('FamilyList', CLOCK_ETAG, 400, 401, 403) })
  }, async (request, reply) => {
    const etag = clockTag(`${request.url}\n${request.user.id}`, await membershipClock(request.db, callerOf(request.user)))
    reply.header('etag', etag)
    if (noneMatch(request.headers['if-none-match'], etag)) return notModified(reply as FastifyReply)
    return await pageOf(request.query, page => listFamiliesOf(request.db, callerOf(request.user), page))
  })

  fastify.post('/api/families', {
    // A personal access token bound to a family reaches no other, a new one included.
    config: { personalTokens: 'unbound' },
    schema: operation('createFamily', 'Create a family; the caller becomes its owner', { body: FamilyBody, response: { 201: Type.Ref('Family'), ...errorResponses(400, 401, 403) } })
  }, async (request, reply) => {
    const created = await request.db.begin(async tx => {
      await beginChange(tx, null, request.user.id)
      const { id } = await insertFamily(tx, request.body.name)
      await addMember(tx, id, request.user.id, 'owner')
      return findFamily(tx, request.user.id, id)
    })
    return reply.code(201).header('location', `/api/families/${created?.id}`).send(created)
  })

  fastify.get('/api/families/:id', {
    preHandler: fastify.familyScope({ target: { family: 'params.id' }, etag: 'version' }),
    schema: operation('getFamily', 'One family', { params: FamilyParams, ...conditionalRead('Family', ITEM_ETAG, 400, 401, 403, 404) })
  }, async request => familyFor(request.db, request.user.id, request.scope.familyId))

  fastify.patch('/api/families/:id', {
    preHandler: fastify.familyScope({ target: { family: 'params.id' }, role: 'owner', ifMatch: true }),
    schema: operation('renameFamily', 'Rename a family (owner)', { params: FamilyParams, headers: ConditionalWrite, body: FamilyBody, response: { 200: Type.Ref('Family'), ...errorResponses(400, 401, 403, 404, 412) } })
  }, async request => {
    const { familyId, expectedVersion } = request.scope
    await request.db.begin(async tx => {
      await beginFamilyWrite(tx, familyId, request.user.id, expectedVersion)
      await renameFamily(tx, familyId, request.body.name)
    })
    return familyFor(request.db, request.user.id, familyId)
  })

  fastify.delete('/api/families/:id', {
    preHandler: fastify.familyScope({ target: { family: 'params.id' }, role: 'owner', ifMatch: true }),
    schema: operation('deleteFamily', 'Delete a family without children (owner)', { params: FamilyParams, headers: ConditionalWrite, response: noContent('Deleted', 400, 401, 403, 404, 409, 412) })
  }, async (request, reply) => {
    const { familyId, expectedVersion } = request.scope
    const deleted = await request.db.begin(async tx => {
      await beginFamilyWrite(tx, familyId, request.user.id, expectedVersion)
      return deleteEmptyFamily(tx, familyId)
    })
    if (!deleted) throw new errors.familyNotEmpty()
    return reply.code(204).send(null)
  })

  fastify.get('/api/families/:id/members', {
    preHandler: fastify.familyScope({ target: { family: 'params.id' }, etag: 'family', cache: true }),
    schema: operation('listFamilyMembers', 'The members of a family', { params: FamilyParams, querystring: ListQuery, ...conditionalRead('MemberList', CLOCK_ETAG, 400, 401, 403, 404) })
  }, async request => {
    return await pageOf(request.query, page => listMembers(request.db, request.scope.familyId, page))
  })

  fastify.patch('/api/families/:id/members/:userId', {
    preHandler: family('owner'),
    schema: operation('updateFamilyMember', 'Change a member\'s role (owner)', {
      description: 'The last owner cannot be demoted (409 LAST_OWNER).',
      params: MemberParams, body: MemberBody,
      response: { 200: Type.Ref('Member'), ...errorResponses(400, 401, 403, 404, 409) }
    })
  }, async request => {
    const { familyId } = request.scope
    const { userId } = request.params
    return request.db.begin(async tx => {
      await beginFamilyChange(tx, familyId, request.user.id)
      const standing = await lockedStanding(tx, familyId, userId)
      if (losesLastOwner(standing, request.body.role)) {
        throw new errors.lastOwner('The last owner of a family cannot be demoted')
      }
      return setMemberRole(tx, familyId, userId, request.body.role)
    })
  })

  fastify.delete('/api/families/:id/members/:userId', {
    preHandler: fastify.familyScope({ target: { family: 'params.id' }, role: 'owner', self: 'params.userId' }),
    schema: operation('removeFamilyMember', 'Remove a member (owner), or leave the family (the member itself)', {
      description: 'The last owner can neither leave nor be removed (409 LAST_OWNER).',
      params: MemberParams,
      response: noContent('Removed', 400, 401, 403, 404, 409)
    })
  }, async (request, reply) => {
    const { familyId } = request.scope
    const { userId } = request.params
    await request.db.begin(async tx => {
      await beginFamilyChange(tx, familyId, request.user.id)
      const standing = await lockedStanding(tx, familyId, userId)
      if (losesLastOwner(standing, null)) throw new errors.lastOwner('The last owner cannot leave or be removed')
      await removeMember(tx, familyId, userId)
    })
    return reply.code(204).send(null)
  })

  fastify.get('/api/families/:id/invites', {
    preHandler: family('owner'),
    schema: operation('listFamilyInvites', 'Open invites of a family (owner)', { params: FamilyParams, querystring: ListQuery, response: { 200: Type.Ref('InviteList'), ...errorResponses(400, 401, 403, 404) } })
  }, async request => {
    return await pageOf(request.query, page => listOpenInvites(request.db, request.scope.familyId, page))
  })

  fastify.post('/api/families/:id/invites', {
    preHandler: family('owner'),
    schema: operation('createFamilyInvite', 'Invite an e-mail address into the family (owner)', {
      description: 'The token is shown only in this answer. The invite is valid for 7 days, once, for this e-mail only; a new invite for the same e-mail replaces an open one.',
      params: FamilyParams, body: InviteBody,
      response: { 201: Type.Ref('CreatedInvite'), ...errorResponses(400, 401, 403, 404, 409) }
    })
  }, async (request, reply) => {
    const { familyId } = request.scope
    const { email, role } = request.body
    const token = randomBytes(32).toString('base64url')
    const invite = await request.db.begin(async tx => {
      if (await isMemberByEmail(tx, familyId, email)) throw new errors.alreadyMember('That e-mail already belongs to a member of the family')
      return createInvite(tx, { familyId, email, role, tokenHash: tokens.hash(token), invitedBy: request.user.id })
    })
    return reply.code(201).send({ ...invite, token })
  })

  fastify.delete('/api/families/:id/invites/:inviteId', {
    preHandler: family('owner'),
    schema: operation('revokeFamilyInvite', 'Revoke an invite (owner)', { params: InviteParams, response: noContent('Revoked', 400, 401, 403, 404) })
  }, async (request, reply) => {
    if (!(await revokeInvite(request.db, request.scope.familyId, request.params.inviteId))) throw new errors.notFound('Invite')
    return reply.code(204).send(null)
  })

  historyRoute(fastify, { kind: 'family', path: '/api/families/:id/history', name: 'Family', tag: 'families', operationId: 'getFamilyHistory' })
}

export default families
