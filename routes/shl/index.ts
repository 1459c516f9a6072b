import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { fileAt, linkNotFound, LOCATION_SECONDS, manifestOf } from '../../domain/shares/manifest'
import { errorResponses } from '../../lib/schemas'
import { serviceBase } from '../../lib/shares/link'
import { FileParams, JoseResponse, Manifest, ManifestParams, ManifestRequest } from './schemas'

const tags = ['shares']

/**
 * The public side of share links, registered under /api/shl: a link's
 * manifest (POST to the link's url) and its file's short-lived address. The
 * token in the path is the credential, so no bearer is asked for; each is
 * rate-limited per client address like the auth routes. Whatever makes a
 * link unusable (expired, revoked, locked by wrong passcodes, never made,
 * or not a link at all, any path under /api/shl included), the answer is
 * the same 404, and nothing in its headers tells them apart.
 */
const shl: FastifyPluginAsyncTypebox = async function (fastify) {
  const { config, sql } = fastify
  fastify.addSchema(Manifest)

  fastify.addHook('onRequest', (_request, reply, done) => {
    reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer')
    done()
  })

  // Rate-limited like the routes, so that its answer looks like theirs.
  fastify.setNotFoundHandler({ preHandler: fastify.rateLimit() }, async () => {
    throw linkNotFound()
  })

  fastify.post('/:token', {
    config: { rateLimit: {} },
    schema: {
      operationId: 'shareManifest',
      tags,
      summary: 'The manifest of a SMART Health Link, for a viewer that holds the link',
      description: 'The SMART Health Links manifest request: POST to the url of the link\'s payload with `{ recipient, passcode?, embeddedLengthMax? }`. ' +
        'The answer lists one file, the child\'s summary (an International Patient Summary style FHIR R4 document Bundle) encrypted as a compact JWE with the link\'s key: ' +
        `embedded, or, when it is longer than embeddedLengthMax, at a location that answers it once within ${LOCATION_SECONDS / 3600} hour. ` +
        'Every request is logged for the family (time, recipient, address). A link whose flag holds P needs its passcode: without it, or with a wrong one, 401 PASSCODE_INVALID ' +
        'with details.remainingAttempts, the wrong passcodes the link still takes; the tenth kills the link. ' +
        'An expired, revoked or dead link, and one that never existed, answer the same 404. Rate-limited per client address (AUTH_RATE_LIMIT_MAX a window).',
      security: [],
      params: ManifestParams,
      body: ManifestRequest,
      response: {
        200: Type.Ref('ShlManifest'),
        ...errorResponses(400, 404, 429),
        401: Type.Ref('Error', { description: 'The link needs its passcode, or the one given is wrong: details.remainingAttempts tells how many wrong ones it still takes' })
      }
    }
  }, async request => {
    const { recipient, passcode, embeddedLengthMax } = request.body
    return await manifestOf(sql, request.params.token, { recipient, passcode, embeddedLengthMax, address: request.ip }, serviceBase(config.publicUrl, request))
  })

  fastify.get('/files/:ticket', {
    config: { rateLimit: {} },
    // A HEAD would use up the address: there is none.
    exposeHeadRoute: false,
    schema: {
      operationId: 'shareFile',
      tags,
      summary: 'A file of a SMART Health Link\'s manifest, at its location',
      description: `Answers the file once, within ${LOCATION_SECONDS / 3600} hour of the manifest request, while the link is active; otherwise the same 404 as a link that never existed.`,
      security: [],
      params: FileParams,
      response: { 200: JoseResponse, ...errorResponses(404, 429) }
    }
  }, async (request, reply) => {
    const content = await fileAt(sql, request.params.ticket)
    return reply.type('application/jose').send(content)
  })
}

export default shl
