// The service's response serializers: fast-json-stringify, as Fastify's own,
// given only the shared schemas a response refers to (it checks each one it
// is given, for every response), and compiled once per process.
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import { referencedIds, reusingCompiled } from './compiled-schemas'

type Schema = Record<string, any>
interface Route { schema: Schema, method: string, url: string, httpStatus: string }

function serializers (externalSchemas: Record<string, unknown>, options?: object): (route: Route) => (doc: unknown) => string {
  const factory = SerializerSelector()
  const byRefs = new Map<string, ReturnType<typeof factory>>()
  return route => {
    const ids = [...referencedIds(route.schema, externalSchemas)].sort()
    const key = ids.join(' ')
    let compile = byRefs.get(key)
    if (compile === undefined) {
      compile = factory(Object.fromEntries(ids.map(id => [id, externalSchemas[id]])), options)
      byRefs.set(key, compile)
    }
    return compile(route)
  }
}

export const buildSerializer = reusingCompiled<Route, (doc: unknown) => string>(serializers, route => route.httpStatus)
