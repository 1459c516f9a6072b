import { Type } from '@sinclair/typebox'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'

/** The OpenAPI document, and a page to browse it that needs nothing from the internet. */
const docs: FastifyPluginAsyncTypebox = async function (fastify) {
  fastify.get('/api/openapi.json', {
    schema: {
      operationId: 'getOpenApiDocument',
      tags: ['documentation'],
      summary: 'The OpenAPI document of this API',
      security: [],
      response: { 200: Type.Object({}, { additionalProperties: true, description: 'OpenAPI 3 document' }) }
    }
  }, async () => fastify.swagger())

  await fastify.register(swaggerUi, {
    routePrefix: '/api/docs',
    staticCSP: false,
    uiConfig: { docExpansion: 'list', deepLinking: true, validatorUrl: null, url: '/api/openapi.json' } as Record<string, unknown>
  })
}

export default docs
