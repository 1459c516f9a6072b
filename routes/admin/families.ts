import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { lockedStanding, losesLastOwner } from '../../domain/families'
import { errors } from '../../lib/errors'
import { errorResponses, noContent, operations } from '../../lib/schemas'
import { removeWhenCommitted } from '../../domain/stored-files'
import {
  deleteFamilyWithContents, familyMembers, findMember, insertMember, listAllFamilies, lockFamily, type FamilySortField
} from '../../sql/admin'
import { findFamily, removeMember } from '../../sql/families'
import { findUser } from '../../sql/users'
import { AddMemberBody, FamilyListQuery, FamilyParams, MemberParams } from './schemas'
import { parseSort } from './sort'
import { pageOf } from '../list'

/**
 * Families as administrators manage them: membership and deletion only. Their
 * children's data stays behind the family scope, for administrators too.
 */
const families: FastifyPluginAsyncTypebox = async function (fastify) {
  const { config } = fastify
  const tags = ['admin']
  const operation = operations(tags)

  fastify.get('/api/admin/families', {
    schema: operation('listAdminFamilies', 'Every family, searched by name', {
      description: '`role` is the administrator\'s own role in each family, null where not a member.',
      querystring: FamilyListQuery,
      response: { 200: Type.Ref('FamilyList'), ...errorResponses(400, 401, 403) }
    })
  }, async request => {
    const { q, sort } = request.query
    const order = parseSort<FamilySortField>(sort, [])
    return await pageOf(request.query, page => listAllFamilies(request.db, request.user.id, { ...page, q, sort: order }))
  })

  fastify.get('/api/admin/families/:id', {
    schema: operation('getAdminFamily', 'One family with its members', { params: FamilyParams, response: { 200: Type.Ref('AdminFamily'), ...errorResponses(400, 401, 403, 404) } })
  }, async request => {
    const { id } = request.params
    // One snapshot, so that the member count and the members agree.
    return request.db.begin('read only isolation level repeatable read', async tx => {
      const family = await findFamily(tx, request.user.id, id)
      if (family === undefined) throw new errors.notFound('Family')
      return { ...family, members: await familyMembers(tx, id) }
    })
  })

  fastify.post('/api/admin/families/:id/members', {
    schema: operation('addAdminFamilyMember', 'Add a user to a family', {
      description: 'A user who already is a member: 409 ALREADY_MEMBER.',
      params: FamilyParams, body: AddMemberBody,
      response: { 201: Type.Ref('Member'), ...errorResponses(400, 401, 403, 404, 409) }
    })
  }, async (request, reply) => {
    const { id } = request.params
    const { userId, role } = request.body
    const member = await request.db.begin(async tx => {
      if (!(await lockFamily(tx, id))) throw new errors.notFound('Family')
      if (await findUser(tx, userId) === undefined) throw new errors.notFound('User')
      if (!(await insertMember(tx, id, userId, role))) throw new errors.alreadyMember('The user is already a member of this family')
      return findMember(tx, id, userId)
    })
    return reply.code(201).send(member)
  })

  fastify.delete('/api/admin/families/:id/members/:userId', {
    schema: operation('removeAdminFamilyMember', 'Remove a member from a family', {
      description: 'The last owner of a family with other members cannot be removed (409 LAST_OWNER). A family left without members is kept.',
      params: MemberParams,
      response: noContent('Removed', 400, 401, 403, 404, 409)
    })
  }, async (request, reply) => {
    const { id, userId } = request.params
    await request.db.begin(async tx => {
      if (!(await lockFamily(tx, id))) throw new errors.notFound('Family')
      const standing = await lockedStanding(tx, id, userId)
      if (losesLastOwner(standing, null, true)) {
        throw new errors.lastOwner('The last owner of a family with other members cannot be removed')
      }
      await removeMember(tx, id, userId)
    })
    return reply.code(204).send(null)
  })

  fastify.delete('/api/admin/families/:id', {
    schema: operation('deleteAdminFamily', 'Delete a family with everything in it', {
      description: 'Its children, their records, attachments and avatars, files included, its members and its invites.',
      params: FamilyParams,
      response: noContent('Deleted', 400, 401, 403, 404)
    })
  }, async (request, reply) => {
    const files = await request.db.begin(tx => deleteFamilyWithContents(tx, request.params.id))
    if (files === undefined) throw new errors.notFound('Family')
    await removeWhenCommitted(request, config, files, 'stored files could not be removed')
    return reply.code(204).send(null)
  })
}

export default families
