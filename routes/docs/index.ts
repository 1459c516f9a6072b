import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'

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
}

export default docs
