import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'
import type { TSchema } from '@sinclair/typebox'

export interface OpenApiOptions {
  /** Schemas with an $id, shared by the routes and named in the document. */
  schemas: TSchema[]
}

/**
 * The OpenAPI document, made from the same schemas that validate requests and
 * serialize responses. Schemas with an $id become named components.
 */
export default fp<OpenApiOptions>(async function openapi (fastify, opts) {
  for (const schema of opts.schemas) fastify.addSchema(schema)

  await fastify.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Child health records API',
        description: 'A family\'s child-health records: growth measurements, doctor visits, vaccines and medications, illnesses, and their files.',
        version: fastify.config.version
      },
      // Paths begin with /api: a generated client needs only the server's origin.
      servers: [{ url: '/', description: 'The server that serves this document' }],
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }
        }
      }
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`)
    }
  })
}, { name: 'openapi', dependencies: ['config'] })
