import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'
import { namedSchemas } from '../routes/schemas'

/**
 * The OpenAPI document, made from the same schemas that validate requests and
 * serialize responses. Schemas with an $id become named components.
 */
export default fp(async function openapi (fastify) {
  for (const schema of namedSchemas) fastify.addSchema(schema)

  await fastify.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Child health records API',
        description: 'A family\'s child-health records: growth measurements, doctor visits, vaccines and medications, illnesses, and their files.',
        version: fastify.config.version
      },
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
