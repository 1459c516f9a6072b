// The service's response serializers: fast-json-stringify, as Fastify's own,
// given only the shared schemas a response refers to (it checks each one it
// is given, for every response), and compiled once per process, or found
// made at build time.
import { referencedIds, reusingCompiled, type CompileRequest, type Precompiled } from './compiled-schemas'

type Schema = Record<string, any>
interface Route { schema: Schema, method: string, url: string, httpStatus: string }

/** The shared schemas a response refers to, by id. */
function referenced (schema: Schema, externalSchemas: Record<string, unknown>): { key: string, schemas: Record<string, unknown> } {
  const ids = [...referencedIds(schema, externalSchemas)].sort()
  return { key: ids.join(' '), schemas: Object.fromEntries(ids.map(id => [id, externalSchemas[id]])) }
}

function serializers (externalSchemas: Record<string, unknown>, options?: object): (route: Route) => (doc: unknown) => string {
  // fast-json-stringify loads with the first schema a process compiles: the built service finds its serializers written out.
  const { SerializerSelector } = require('@fastify/fast-json-stringify-compiler') as typeof import('@fastify/fast-json-stringify-compiler')
  const factory = SerializerSelector()
  const byRefs = new Map<string, ReturnType<typeof factory>>()
  return route => {
    const { key, schemas } = referenced(route.schema, externalSchemas)
    let compile = byRefs.get(key)
    if (compile === undefined) {
      compile = factory(schemas, options)
      byRefs.set(key, compile)
    }
    return compile(route)
  }
}

export function serializerFactory (precompiled?: Precompiled) {
  return reusingCompiled<Route, (doc: unknown) => string>(serializers, route => route.httpStatus, 'serializer', precompiled)
}

export const buildSerializer = serializerFactory()

/** A serializer's code as a CommonJS module, as the build writes it out: what Fastify's serializer compiler would make. */
export function serializerCode (request: CompileRequest): string {
  const schema = request.route.schema
  const { schemas } = referenced(schema, request.externalSchemas)
  // Fastify's compiler leaves out a shared schema that is the response's own.
  if (typeof schema.$id === 'string') delete schemas[schema.$id]
  const options = (request.rest[0] ?? {}) as object
  const fastJsonStringify = require('fast-json-stringify') as typeof import('fast-json-stringify')
  return fastJsonStringify(schema, { ...options, schema: schemas as Record<string, any>, mode: 'standalone' }) as unknown as string
}
