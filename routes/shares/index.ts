import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { ACTIVE_SHARES_PER_CHILD, makeLink, SHARE_FILES_MAX_BYTES } from '../../domain/shares/links'
import { errors, invalidRequest, withRetryAfter } from '../../lib/errors'
import { ExportSlots } from '../../lib/export/slots'
import type { SummarySection } from '../../lib/fhir'
import { errorResponses, noContent, operations } from '../../lib/schemas'
import { serviceBase } from '../../lib/shares/link'
import { orderBy } from '../../sql/list'
import { findShare, listShares, revokeShare, type ShareStatus } from '../../sql/shares'
import { ChildParams, CreateShareBody, DEFAULT_SECTIONS, MAX_DAYS, ShareListQuery, ShareParams } from './schemas'
import { pageOf } from '../list'

const tags = ['shares']
const operation = operations(tags)
const SORTS = { createdAt: 'created_at', expiresAt: 'expires_at' }
/** When a user whose link is being made may make another, in seconds. */
const RETRY_AFTER = 5

const WHO = 'Owners and members of the child\'s family (who may write it); a viewer is refused with 403, as another family, and a missing child is 404.'

/** A link's expiry must lie ahead, and at most MAX_DAYS ahead. */
function checkExpiry (expiresAt: string): Date {
  const at = new Date(expiresAt)
  const now = Date.now()
  if (at.getTime() <= now) throw invalidRequest([{ path: '/body/expiresAt', message: 'must be in the future' }])
  if (at.getTime() > now + MAX_DAYS * 86_400_000) throw invalidRequest([{ path: '/body/expiresAt', message: `must be at most ${MAX_DAYS} days ahead` }])
  return at
}

/**
 * A child's share links (SMART Health Links for a doctor): made, listed with
 * their access log, read and revoked by the owners and members of the
 * child's family. The links' manifests answer in routes/shl.
 */
const shares: FastifyPluginAsyncTypebox = async function (fastify) {
  const { config } = fastify
  // Making a link reads a child's record like an export: as many at once as exports, one per user.
  const building = new ExportSlots(config.exportConcurrency, 1)


  fastify.post('/api/children/:childId/shares', {
    // It waits on more than the database (building and encrypting the summary): its key is not held in a transaction.
    config: { idempotency: 'apart', batch: false },
    preHandler: fastify.familyScope({ target: { child: 'params.childId' }, role: 'member' }),
    schema: operation('createShare', 'Share a child\'s record with a doctor: a SMART Health Link and its QR code', {
      description: `${WHO} The link is a snapshot: the summary (an International Patient Summary style FHIR R4 document of the sections asked for) is made now, ` +
        'encrypted once with a fresh key, and kept only encrypted; later changes of the record are not in it. The key and the manifest\'s token are only in the link, ' +
        'answered here once. With attachments, the files themselves are in the summary, at most ' + `${SHARE_FILES_MAX_BYTES} bytes of them (more is a 400). ` +
        `A child has at most ${ACTIVE_SHARES_PER_CHILD} active links (409 beyond). The label travels in the link in the clear. ` +
        'One link of a user is made at a time (429 with Retry-After for a second).',
      params: ChildParams, body: CreateShareBody,
      response: { 201: Type.Ref('CreatedShare'), ...errorResponses(400, 401, 403, 404, 409, 429) }
    })
  }, async (request, reply) => {
    const { label, passcode, sections } = request.body
    const expiresAt = checkExpiry(request.body.expiresAt)
    const given = building.take(request.user.id)
    if (given === null) throw withRetryAfter(new errors.rateLimited(`A link of yours is being made; retry in ${RETRY_AFTER} seconds`), RETRY_AFTER)
    let made
    try {
      made = await makeLink(request.db, {
        childId: request.params.childId,
        userId: request.user.id,
        label,
        expiresAt,
        passcode: passcode ?? null,
        sections: (sections ?? DEFAULT_SECTIONS) as SummarySection[]
      }, {
        charts: { who: fastify.growth.tables, cdc: fastify.growth.cdc },
        uploadDir: config.uploadDir,
        bcryptCost: config.bcryptCost,
        publicUrl: config.publicUrl,
        base: serviceBase(config.publicUrl, request)
      })
    } finally {
      given()
    }
    const share = await findShare(request.db, made.id, { userId: request.user.id, role: request.scope.role })
    return reply.code(201).header('location', `/api/shares/${made.id}`).header('cache-control', 'no-store').send({ ...share, link: made.link, qr: made.qr })
  })

  fastify.get('/api/children/:childId/shares', {
    preHandler: fastify.familyScope({ target: { child: 'params.childId' }, role: 'member' }),
    schema: operation('listShares', 'A child\'s share links, with their access logs', {
      description: `${WHO} Every link of the child, active or not, without its secrets; a link that ended more than 90 days ago is gone. ` +
        'Each shows its latest manifest requests (time, recipient, address, outcome) to the family\'s owners and to the member who made it; other members see their count only.',
      params: ChildParams, querystring: ShareListQuery,
      response: { 200: Type.Ref('ShareList'), ...errorResponses(400, 401, 403, 404) }
    })
  }, async request => {
    const { status, sort } = request.query
    const order = orderBy(request.db, sort ?? '-createdAt', SORTS)
    const viewer = { userId: request.user.id, role: request.scope.role }
    return await pageOf(request.query, page => listShares(request.db, request.params.childId, viewer, { ...page, order, status: status as ShareStatus | undefined }))
  })

  fastify.get('/api/shares/:id', {
    preHandler: fastify.familyScope({ target: { share: 'params.id' }, role: 'member' }),
    schema: operation('getShare', 'One share link, with its access log', { description: `${WHO} As the list shows it.`, params: ShareParams, response: { 200: Type.Ref('Share'), ...errorResponses(400, 401, 403, 404) } })
  }, async request => {
    const share = await findShare(request.db, request.params.id, { userId: request.user.id, role: request.scope.role })
    if (share === undefined) throw new errors.notFound('Share')
    return share
  })

  fastify.delete('/api/shares/:id', {
    preHandler: fastify.familyScope({ target: { share: 'params.id' }, role: 'member' }),
    schema: operation('revokeShare', 'Revoke a share link', {
      description: `${WHO} From now on the link answers 404 as one that never existed, and its encrypted summary is removed; ` +
        'the link stays listed as revoked, with its access log, for 90 days. Revoking a revoked link changes nothing.',
      params: ShareParams,
      response: noContent('Revoked', 400, 401, 403, 404)
    })
  }, async (request, reply) => {
    await revokeShare(request.db, request.params.id)
    return reply.code(204).send(null)
  })
}

export default shares
