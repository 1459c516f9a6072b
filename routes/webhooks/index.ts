import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { createFamilyWebhook, presentWebhook } from '../../domain/webhooks/manage'
import { errors, found } from '../../lib/errors'
import { errorResponses, noContent, operations } from '../../lib/schemas'
import { deleteWebhook, enableWebhook, findWebhook, listDeliveries, listWebhooks, lockWebhookMaker } from '../../sql/webhooks'
import { EnableBody, FamilyParams, ListQuery, MAX_WEBHOOKS, WebhookBody, WebhookParams } from './schemas'
import { pageOf } from '../list'

const tags = ['webhooks']
const operation = operations(tags)

const DELIVERY = 'Each change of the family made after the webhook was created (as the changes feed shows it, a family\'s role null) is POSTed to its URL as JSON, ' +
  'one change a request, in the feed\'s order, signed per the Standard Webhooks specification: webhook-id is the change\'s cursor, webhook-timestamp the attempt\'s time in seconds, ' +
  'webhook-signature v1, and the base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>" keyed with the secret\'s bytes (base64 after whsec_). ' +
  'A change counts as delivered on a 2xx answer within WEBHOOK_TIMEOUT (10 s); a 3xx (redirects are not followed), any other status, no answer or a refused address is a failure, ' +
  'recorded with the status alone (the answer\'s body is never kept) or, without an answer, "the webhook could not be reached" whatever the cause, ' +
  'and the same change is tried again after WEBHOOK_RETRY_MS, then WEBHOOK_RETRY_GROWTH times as long each time (at most WEBHOOK_RETRY_MAX_MS); no later change is sent before it. ' +
  'Delivery is at least once: a receiver may get a change again (the same webhook-id) and should ignore it. ' +
  'After WEBHOOK_GIVE_UP_MS (24 hours) of failures in a row the webhook is disabled, with the reason in disabledReason; enabling it again goes on from the first change not delivered. ' +
  'A webhook delivers only while its maker (createdBy) is an owner of the family with an enabled account: it stops at once, with the reason in disabledReason, ' +
  'when the maker leaves the family or is removed from it, is demoted below owner, or the maker\'s account is disabled or deleted; nothing is sent after that, not even changes already waiting.'

/** A family's webhooks (owner): made, listed, deleted, enabled again, and their delivery log. */
const webhooks: FastifyPluginAsyncTypebox = async function (fastify) {
  const { config } = fastify
  const owner = fastify.familyScope({ target: { family: 'params.id' }, role: 'owner' })

  fastify.post('/api/families/:id/webhooks', {
    // It waits on more than the database (the network): its key is not held in a transaction.
    config: { idempotency: 'apart', batch: false },
    preHandler: owner,
    schema: operation('createFamilyWebhook', 'Make a webhook of the family (owner)', {
      description: `Answers the webhook with its secret, shown only here. At most ${MAX_WEBHOOKS} webhooks a family (409 beyond). ` +
        'A URL the outbound rule refuses (see url), written so (127.0.0.1, [::ffff:7f00:1], localhost, 10.0.0.5) or resolved so now, is a 400; ' +
        'a name is resolved and judged again at each delivery, which connects to the address judged. An unknown kind in events is a 400. ' + DELIVERY,
      params: FamilyParams, body: WebhookBody,
      response: { 201: Type.Ref('CreatedWebhook'), ...errorResponses(400, 401, 403, 404, 409) }
    })
  }, async (request, reply) => {
    const { familyId } = request.scope
    const created = await createFamilyWebhook(request.db, config, {
      familyId, userId: request.user.id, url: request.body.url, events: request.body.events ?? null, max: MAX_WEBHOOKS
    })
    // The first webhook gives the job queue's worker something to do: it starts if it waited.
    await request.afterCommit(async () => { fastify.jobs.wanted() })
    return reply.code(201).header('location', `/api/families/${familyId}/webhooks/${created.id}`).send(created)
  })

  fastify.get('/api/families/:id/webhooks', {
    preHandler: owner,
    schema: operation('listFamilyWebhooks', 'The family\'s webhooks (owner), never their secrets', {
      description: DELIVERY,
      params: FamilyParams, querystring: ListQuery,
      response: { 200: Type.Ref('WebhookList'), ...errorResponses(400, 401, 403, 404) }
    })
  }, async request => {
    const { familyId } = request.scope
    return await pageOf(request.query, async page => {
      const { rows, total } = await listWebhooks(request.db, familyId, page)
      return { rows: rows.map(row => presentWebhook(familyId, row)), total }
    })
  })

  fastify.get('/api/families/:id/webhooks/:wid', {
    preHandler: owner,
    schema: operation('getFamilyWebhook', 'One webhook of the family (owner), without its secret', { params: WebhookParams, response: { 200: Type.Ref('Webhook'), ...errorResponses(400, 401, 403, 404) } })
  }, async request => {
    const row = found(await findWebhook(request.db, request.scope.familyId, request.params.wid), 'Webhook')
    return presentWebhook(request.scope.familyId, row)
  })

  fastify.delete('/api/families/:id/webhooks/:wid', {
    preHandler: owner,
    schema: operation('deleteFamilyWebhook', 'Delete a webhook (owner): its deliveries stop, its log goes', { params: WebhookParams, response: noContent('Deleted', 400, 401, 403, 404) })
  }, async (request, reply) => {
    const deleted = await request.db.begin(async tx => await deleteWebhook(tx, request.scope.familyId, request.params.wid))
    if (!deleted) throw new errors.notFound('Webhook')
    return reply.code(204).send(null)
  })

  fastify.post('/api/families/:id/webhooks/:wid/enable', {
    // It waits on more than the database (the network): its key is not held in a transaction.
    config: { idempotency: 'apart', batch: false },
    preHandler: owner,
    schema: operation('enableFamilyWebhook', 'Enable a webhook again (owner)', {
      description: 'Clears the failures and the reason it was disabled, and delivers at once from the first change not delivered, the changes made while it was disabled included. ' +
        'An enabled webhook is left as it is, and its deliveries start again at once (a waiting retry too). ' +
        'Only while its maker (createdBy) is an owner of the family with an enabled account: otherwise 409 WEBHOOK_MAKER_NOT_OWNER, ' +
        'since its URL was chosen by someone who may no longer read the family; make a new webhook instead.',
      params: WebhookParams, body: EnableBody,
      response: { 200: Type.Ref('Webhook'), ...errorResponses(400, 401, 403, 404, 409) }
    })
  }, async request => {
    const { familyId } = request.scope
    const row = await request.db.begin(async tx => {
      const makerIsOwner = await lockWebhookMaker(tx, familyId, request.params.wid)
      if (makerIsOwner === undefined) throw new errors.notFound('Webhook')
      if (!makerIsOwner) throw new errors.webhookMakerNotOwner()
      return await enableWebhook(tx, familyId, request.params.wid)
    })
    if (row === undefined) throw new errors.notFound('Webhook')
    return presentWebhook(familyId, row)
  })

  fastify.get('/api/families/:id/webhooks/:wid/deliveries', {
    preHandler: owner,
    schema: operation('listFamilyWebhookDeliveries', 'A webhook\'s delivery attempts (owner), newest first', {
      description: 'Each attempt: when, the change\'s cursor, the receiver\'s status code or the error, how long it took, and the first words of the answer. ' +
        'The latest 1000 attempts of each webhook are kept.',
      params: WebhookParams, querystring: ListQuery,
      response: { 200: Type.Ref('WebhookDeliveryList'), ...errorResponses(400, 401, 403, 404) }
    })
  }, async request => {
    if (await findWebhook(request.db, request.scope.familyId, request.params.wid) === undefined) throw new errors.notFound('Webhook')
    return await pageOf(request.query, page => listDeliveries(request.db, request.params.wid, page))
  })
}

export default webhooks
