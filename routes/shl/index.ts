import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { fileAt, linkNotFound, LOCATION_SECONDS, manifestOf } from '../../domain/shares/manifest'
import { errorResponses, operations } from '../../lib/schemas'
import { serviceBase } from '../../lib/shares/link'
import { ANY_ORIGIN } from '../../plugins/security'
import { FileParams, JoseResponse, Manifest, ManifestParams, ManifestRequest, PasscodeRefused } from './schemas'

const tags = ['shares']
const operation = operations(tags, [])

const ANY_PAGE = 'Any origin may read it (CORS: Access-Control-Allow-Origin: *, without credentials), whatever CORS_ORIGIN says: a doctor\'s viewer is a page of another origin.'

/** The preflight of a link's route, answered 204 before any handler. */
function preflight (operationId: string, summary: string, params: typeof ManifestParams | typeof FileParams) {
  return {
    config: { cors: ANY_ORIGIN },
    schema: operation(operationId, summary, {
      description: 'Answers 204 to any OPTIONS request, from any origin, with Access-Control-Allow-Origin: *, the methods GET and POST, ' +
        `the request header Content-Type, and Access-Control-Max-Age ${ANY_ORIGIN.maxAge as number}. No credentials are involved.`,
      params,
      response: { 204: Type.Null({ description: 'The CORS preflight\'s answer' }) }
    })
  }
}

/**
 * The public side of share links, registered under /api/shl: a link's
 * manifest (POST to the link's url) and its file's short-lived address. The
 * token in the path is the credential, so no bearer is asked for; each is
 * rate-limited per client address like the auth routes, and any origin may
 * read their answers. Whatever makes a link unusable (expired, revoked,
 * locked by wrong passcodes, never made, or not a link at all, any path
 * under /api/shl included), the answer is the same 404, and nothing in its
 * headers tells them apart.
 */
const shl: FastifyPluginAsyncTypebox = async function (fastify) {
  const { config } = fastify
  fastify.addSchema(Manifest)
  fastify.addSchema(PasscodeRefused)

  fastify.addHook('onRequest', (_request, reply, done) => {
    reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer')
    done()
  })

  // Every other path and method, with the routes' rate limit and CORS, so that its answer looks like theirs; /api/shl itself too.
  const notFound = async (): Promise<never> => { throw linkNotFound() }
  fastify.all('/*', { config: { rateLimit: {}, cors: ANY_ORIGIN }, schema: { hide: true } }, notFound)
  fastify.setNotFoundHandler({ preHandler: fastify.rateLimit() }, notFound)

  // Never reached: the CORS plugin answers every OPTIONS request of these routes.
  const preflightAnswer = async (): Promise<null> => null
  fastify.options('/:token', preflight('shareManifestPreflight', 'The CORS preflight of a SMART Health Link\'s manifest', ManifestParams), preflightAnswer)
  fastify.options('/files/:ticket', preflight('shareFilePreflight', 'The CORS preflight of a file\'s location', FileParams), preflightAnswer)

  fastify.post('/:token', {
    config: { rateLimit: {}, cors: ANY_ORIGIN },
    schema: operation('shareManifest', 'The manifest of a SMART Health Link, for a viewer that holds the link', {
      description: 'The SMART Health Links manifest request: POST to the url of the link\'s payload with `{ recipient, passcode?, embeddedLengthMax? }`. ' +
        'The answer lists one file, the child\'s summary (an International Patient Summary style FHIR R4 document Bundle) encrypted as a compact JWE with the link\'s key: ' +
        `embedded, or, when it is longer than embeddedLengthMax, at a location that answers it once within ${LOCATION_SECONDS / 3600} hour. ` +
        'Every request is logged for the family (time, recipient, address). A link whose flag holds P needs its passcode: without it, or with a wrong one, 401 PASSCODE_INVALID ' +
        'with remainingAttempts at the top level of the body, as the SMART Health Links specification writes it (and in details as well): the wrong passcodes the link still takes; the tenth kills the link. ' +
        'An expired, revoked or dead link, and one that never existed, answer the same 404. Rate-limited per client address (AUTH_RATE_LIMIT_MAX a window). ' + ANY_PAGE,
      params: ManifestParams, body: ManifestRequest,
      response: {
        200: Type.Ref('ShlManifest'),
        ...errorResponses(400, 404, 429),
        401: Type.Ref('ShlPasscodeRefused', { description: 'The link needs its passcode, or the one given is wrong: remainingAttempts tells how many wrong ones it still takes' })
      }
    })
  }, async request => {
    const { recipient, passcode, embeddedLengthMax } = request.body
    return await manifestOf(request.db, request.params.token, { recipient, passcode, embeddedLengthMax, address: request.ip }, serviceBase(config.publicUrl, request))
  })

  fastify.get('/files/:ticket', {
    config: { rateLimit: {}, cors: ANY_ORIGIN },
    // A HEAD would use up the address: there is none.
    exposeHeadRoute: false,
    schema: operation('shareFile', 'A file of a SMART Health Link\'s manifest, at its location', {
      description: `Answers the file once, within ${LOCATION_SECONDS / 3600} hour of the manifest request, while the link is active; otherwise the same 404 as a link that never existed. ` + ANY_PAGE,
      params: FileParams,
      response: { 200: JoseResponse, ...errorResponses(404, 429) }
    })
  }, async (request, reply) => {
    const content = await fileAt(request.db, request.params.ticket)
    return reply.type('application/jose').send(content)
  })
}

export default shl
