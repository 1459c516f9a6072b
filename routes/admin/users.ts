import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { errors, found, withDetails } from '../../lib/errors'
import { losesLastOwner } from '../../domain/families'
import { hashPassword, passwordKey } from '../../io/passwords'
import { errorResponses, noContent, operations } from '../../lib/schemas'
import { removeWhenCommitted } from '../../domain/stored-files'
import type { Db } from '../../db/client'
import {
  deleteFamilyWithContents, deleteUser, findAdminUser, listAdminUsers, lockAccount, lockMembershipsOf,
  otherActiveAdmins, updateUserAccount, type UserSortField
} from '../../sql/admin'
import { revokeAccountSessions, revokeUserSessions } from '../../sql/sessions'
import { emailTaken, findUser, insertUser, setPasswordHash } from '../../sql/users'
import { CreateUserBody, SetPasswordBody, UpdateUserBody, UserListQuery, UserParams } from './schemas'
import { parseSort } from './sort'
import { pageOf } from '../list'

/** Two requests that give one e-mail at once: the unique index decides, and the loser gets EMAIL_TAKEN. */
function emailConflict (error: unknown): never {
  const { code, constraint_name: constraint } = error as { code?: string, constraint_name?: string }
  if (code === '23505' && constraint === 'users_email_lower_key') throw new errors.emailTaken()
  throw error
}

const users: FastifyPluginAsyncTypebox = async function (fastify) {
  const { config } = fastify
  const tags = ['admin']
  const operation = operations(tags)

  const account = async (db: Db, id: number) => found(await findAdminUser(db, id), 'User')

  fastify.get('/api/admin/users', {
    schema: operation('listAdminUsers', 'Every user, searched and sorted', { querystring: UserListQuery, response: { 200: Type.Ref('AdminUserList'), ...errorResponses(400, 401, 403) } })
  }, async request => {
    const { q, sort } = request.query
    const order = parseSort<UserSortField>(sort, [{ field: 'createdAt', descending: false }])
    return await pageOf(request.query, page => listAdminUsers(request.db, { ...page, q, sort: order }))
  })

  fastify.post('/api/admin/users', {
    // It waits on more than the database (password hashing): its key is not held in a transaction.
    config: { idempotency: 'apart' },
    schema: operation('createAdminUser', 'Create a user', {
      description: 'The user belongs to no family until one is created or joined. The role is `user` unless given. ' +
        'Passwords are hashed in turns between accounts; an administrator with two passwords being hashed gets a 429 with Retry-After for a third.',
      body: CreateUserBody,
      response: { 201: Type.Ref('AdminUser'), ...errorResponses(400, 401, 403, 409, 429) }
    })
  }, async (request, reply) => {
    const { email, password, name, role } = request.body
    const passwordHash = await hashPassword(password, config.bcryptCost, passwordKey.user(request.user.id))
    const user = await request.db.begin(async tx => {
      if (await emailTaken(tx, email)) throw new errors.emailTaken()
      const { id } = await insertUser(tx, { email, name, passwordHash, role: role ?? 'user' })
      return account(tx, id)
    }).catch(emailConflict)
    return reply.code(201).header('location', `/api/admin/users/${user.id}`).send(user)
  })

  fastify.get('/api/admin/users/:id', {
    schema: operation('getAdminUser', 'One user', { params: UserParams, response: { 200: Type.Ref('AdminUser'), ...errorResponses(400, 401, 403, 404) } })
  }, async request => account(request.db, request.params.id))

  fastify.patch('/api/admin/users/:id', {
    schema: operation('updateAdminUser', 'Change a user\'s name, e-mail, role or disabled state', {
      description: 'Disabling revokes every session of the user and every personal access token, for good. The last active admin can be neither demoted nor disabled (409 LAST_ADMIN).',
      params: UserParams, body: UpdateUserBody,
      response: { 200: Type.Ref('AdminUser'), ...errorResponses(400, 401, 403, 404, 409) }
    })
  }, async request => {
    const { id } = request.params
    const changes = request.body
    return request.db.begin(async tx => {
      const current = await lockAccount(tx, id)
      if (current === undefined) throw new errors.notFound('User')
      if (changes.email !== undefined && await emailTaken(tx, changes.email, id)) throw new errors.emailTaken()
      const stepsDown = changes.role === 'user' || changes.disabled === true
      if (current.role === 'admin' && !current.disabled && stepsDown && await otherActiveAdmins(tx, id) === 0) {
        throw new errors.lastAdmin('The last admin can be neither demoted nor disabled')
      }
      await updateUserAccount(tx, id, changes)
      if (changes.disabled === true) await revokeAccountSessions(tx, id)
      return account(tx, id)
    }).catch(emailConflict)
  })

  fastify.post('/api/admin/users/:id/password', {
    // It waits on more than the database (password hashing): its key is not held in a transaction.
    config: { idempotency: 'apart' },
    schema: operation('setAdminUserPassword', 'Set a user\'s password', {
      description: 'Every session of the user is revoked. Passwords are hashed in turns between accounts; an administrator with two passwords being hashed gets a 429 with Retry-After for a third.',
      params: UserParams, body: SetPasswordBody,
      response: noContent('Set', 400, 401, 403, 404, 429)
    })
  }, async (request, reply) => {
    const { id } = request.params
    if (await findUser(request.db, id) === undefined) throw new errors.notFound('User')
    const passwordHash = await hashPassword(request.body.newPassword, config.bcryptCost, passwordKey.user(request.user.id))
    await request.db.begin(async tx => {
      await setPasswordHash(tx, id, passwordHash)
      await revokeUserSessions(tx, id)
    })
    return reply.code(204).send(null)
  })

  fastify.delete('/api/admin/users/:id', {
    schema: operation('deleteAdminUser', 'Delete a user', {
      description: 'The user\'s sessions and memberships go too. A family the user is the only member of is deleted with everything in it, files included. ' +
        'The last active admin (409 LAST_ADMIN) and the last owner of a family with other members (409 LAST_OWNER) cannot be deleted.',
      params: UserParams,
      response: noContent('Deleted', 400, 401, 403, 404, 409)
    })
  }, async (request, reply) => {
    const { id } = request.params
    const files = await request.db.begin(async tx => {
      const current = await lockAccount(tx, id)
      if (current === undefined) throw new errors.notFound('User')
      if (current.role === 'admin' && !current.disabled && await otherActiveAdmins(tx, id) === 0) {
        throw new errors.lastAdmin('The last admin cannot be deleted')
      }
      const memberships = await lockMembershipsOf(tx, id)
      const owned = memberships.filter(m => losesLastOwner(m, null, true))
      if (owned.length > 0) {
        throw withDetails(new errors.lastOwner('The user is the last owner of a family with other members'), { familyIds: owned.map(m => m.familyId) })
      }
      const names = { attachments: [] as string[], avatars: [] as string[] }
      for (const { familyId } of memberships.filter(m => m.members === 1)) {
        const removed = await deleteFamilyWithContents(tx, familyId)
        names.attachments.push(...removed?.attachments ?? [])
        names.avatars.push(...removed?.avatars ?? [])
      }
      await deleteUser(tx, id)
      return names
    })
    await removeWhenCommitted(request, config, files, 'stored files could not be removed')
    return reply.code(204).send(null)
  })
}

export default users
