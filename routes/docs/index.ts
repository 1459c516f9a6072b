import { operations } from '../../lib/schemas'
import { Type } from '@sinclair/typebox'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errors } from '../../lib/errors'

const operation = operations(['documentation'], [])

const STATIC_FOLDER = /^\/api\/docs\/static\//

/**
 * Whether a URL names something outside the docs page's folder of files:
 * `..` as a segment, between / or \, in the path as the router decodes it.
 */
function leavesStaticFolder (url: string): boolean {
  let path = url.split('?')[0]
  try {
    path = decodeURIComponent(path)
  } catch {}
  return STATIC_FOLDER.test(path) && path.split(/[/\\]/).includes('..')
}

/** The OpenAPI document, and a page to browse it that needs nothing from the internet. */
const docs: FastifyPluginAsyncTypebox = async function (fastify) {
  fastify.get('/api/openapi.json', {
    schema: operation('getOpenApiDocument', 'The OpenAPI document of this API', { response: { 200: Type.Object({}, { additionalProperties: true, description: 'OpenAPI 3 document' }) } })
  }, async () => fastify.swagger())

  // The page's own files: a path that leaves their folder is a missing file, not a refusal.
  fastify.addHook('onRequest', async request => {
    if (leavesStaticFolder(request.url)) throw new errors.notFound('File')
  })

  await fastify.register(swaggerUi, {
    routePrefix: '/api/docs',
    staticCSP: false,
    uiConfig: { docExpansion: 'list', deepLinking: true, validatorUrl: null, url: '/api/openapi.json' } as Record<string, unknown>
  })
}

export default docs
