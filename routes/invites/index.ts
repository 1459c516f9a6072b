import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { errors } from '../../lib/errors'
import { errorResponses, operations } from '../../lib/schemas'
import { beginFamilyChange } from '../../sql/changes'
import { addMember, isMember } from '../../sql/families'
import { findOpenInvite, useInvite } from '../../sql/invites'
import { AcceptBody } from './schemas'

const operation = operations(['families'])

/**
 * Accepting an invite needs a signed-in user, but its rate limit comes first,
 * like on the other auth routes; so it lives outside the authenticated scope
 * with its own hooks, in that order.
 */
const invites: FastifyPluginAsyncTypebox = async function (fastify) {
  const { tokens } = fastify

  fastify.post('/api/invites/accept', {
    onRequest: [fastify.rateLimit({}), fastify.authenticate],
    config: { personalTokens: 'refused' },
    schema: operation('acceptInvite', 'Join a family with an invite token', {
      description: 'The invite must name the caller\'s e-mail, held since before the invite was made (an address taken up afterwards does not count), and the owner who made it must still be an owner of the family; otherwise 400 INVITE_INVALID. ' +
        'A member of the family gets 409 ALREADY_MEMBER and the invite stays open.',
      body: AcceptBody,
      response: { 200: Type.Ref('AcceptedInvite'), ...errorResponses(400, 401, 403, 409, 429) }
    })
  }, async request => {
    const userId = request.user.id
    return request.db.begin(async tx => {
      const invite = await findOpenInvite(tx, tokens.hash(request.body.token), { userId })
      if (invite === undefined) throw new errors.inviteInvalid()
      await beginFamilyChange(tx, invite.familyId, userId)
      if (await isMember(tx, invite.familyId, userId)) throw new errors.alreadyMember('You are already a member of this family')
      if (!(await useInvite(tx, invite.id, userId))) throw new errors.inviteInvalid()
      await addMember(tx, invite.familyId, userId, invite.role)
      return { familyId: invite.familyId, familyName: invite.familyName, role: invite.role }
    })
  })
}

export default invites
