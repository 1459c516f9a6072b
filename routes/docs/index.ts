import { operations } from '../../lib/schemas'
import { Type } from '@sinclair/typebox'
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { errors } from '../../lib/errors'

const operation = operations(['documentation'], [])

const PREFIX = '/api/docs'
const STATIC_FOLDER = /^\/api\/docs\/static\//

/** What a browser asks with that the page's own files answer to: conditional and partial requests. */
const FORWARDED_REQUEST_HEADERS = ['if-none-match', 'if-modified-since', 'range', 'if-range'] as const
/** Headers the service's own answer sets itself. */
const OWN_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'date', 'content-length'])

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

/**
 * The docs page (swagger-ui and its files, served by @fastify/static) in an
 * app of its own, made at the page's first request: a start loads none of
 * it. Its document is the service's.
 */
function docsPage (service: FastifyInstance): () => Promise<FastifyInstance> {
  let made: Promise<FastifyInstance> | null = null
  service.addHook('onClose', async () => {
    const page = await made?.catch(() => null)
    await page?.close()
  })
  const make = async (): Promise<FastifyInstance> => {
    const page = Fastify({ logger: false })
    // swagger-ui asks for @fastify/swagger by name: here, the service's document.
    await page.register(fp(async inner => {
      inner.decorate('swagger', ((options?: { yaml?: boolean }) => service.swagger(options as never)) as FastifyInstance['swagger'])
    }, { name: '@fastify/swagger' }))
    const { default: swaggerUi } = await import('@fastify/swagger-ui')
    await page.register(swaggerUi, {
      routePrefix: PREFIX,
      staticCSP: false,
      uiConfig: { docExpansion: 'list', deepLinking: true, validatorUrl: null, url: '/api/openapi.json' } as Record<string, unknown>
    })
    await page.ready()
    return page
  }
  return async () => await (made ??= make().catch(error => {
    made = null
    throw error
  }))
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

  const page = docsPage(fastify)
  /** The page's answer to the same request, as the service's own; anything it does not serve is 404 NOT_FOUND. */
  async function forward (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const headers: Record<string, string> = {}
    for (const name of FORWARDED_REQUEST_HEADERS) {
      const value = request.headers[name]
      if (typeof value === 'string') headers[name] = value
    }
    const answer = await (await page()).inject({ method: 'GET', url: request.url, headers })
    if (answer.statusCode === 404) throw new errors.notFound('File')
    reply.code(answer.statusCode)
    for (const [name, value] of Object.entries(answer.headers)) {
      if (!OWN_HEADERS.has(name) && value !== undefined) reply.header(name, value)
    }
    return await reply.send(answer.rawPayload)
  }
  fastify.get(PREFIX, { schema: { hide: true } }, forward)
  fastify.get(`${PREFIX}/*`, { schema: { hide: true } }, forward)
}

export default docs
