// Compiled validators and serializers, kept for the life of the process.
// Compiling every route's schemas is most of the time an app takes to start;
// a process that builds the app again (the tests, a restart in place) reuses
// what it compiled, as long as the shared schemas are the same.

type Schema = Record<string, any>

/** The shared schemas as text: apps built with equal ones share their compiled functions. */
function fingerprint (externalSchemas: Record<string, unknown>): string {
  return JSON.stringify(Object.keys(externalSchemas).sort().map(id => externalSchemas[id]))
}

const stores = new Map<string, Map<string, Map<string, unknown>>>()
const texts = new WeakMap<Schema, string>()

/** A schema as text: routes build equal schemas afresh each time the app is built. */
function textOf (schema: Schema): string {
  let text = texts.get(schema)
  if (text === undefined) {
    text = JSON.stringify(schema)
    texts.set(schema, text)
  }
  return text
}

/**
 * Wraps a compiler factory of Fastify's shape, so that a schema compiled once
 * (for one request part or status) is compiled only once per set of shared
 * schemas. Equal schemas share their compiled function.
 */
export function reusingCompiled<R extends { schema: Schema }, F> (
  factory: (externalSchemas: Record<string, unknown>, ...rest: any[]) => (route: R) => F,
  part: (route: R) => string
): (externalSchemas?: Record<string, unknown>, ...rest: any[]) => (route: R) => F {
  return (externalSchemas = {}, ...rest) => {
    const key = fingerprint(externalSchemas) + JSON.stringify(rest)
    let store = stores.get(key)
    if (store === undefined) {
      store = new Map()
      stores.set(key, store)
    }
    const shared = store
    let compile: ((route: R) => F) | undefined
    return route => {
      if (route.schema === null || typeof route.schema !== 'object') {
        compile ??= factory(externalSchemas, ...rest)
        return compile(route)
      }
      const text = textOf(route.schema)
      let byPart = shared.get(text)
      if (byPart === undefined) {
        byPart = new Map()
        shared.set(text, byPart)
      }
      const name = part(route)
      if (!byPart.has(name)) {
        compile ??= factory(externalSchemas, ...rest)
        byPart.set(name, compile(route))
      }
      return byPart.get(name) as F
    }
  }
}

/** The ids of the shared schemas a schema refers to, directly or through another. */
export function referencedIds (schema: unknown, externalSchemas: Record<string, unknown>): Set<string> {
  const found = new Set<string>()
  const stack: unknown[] = [schema]
  while (stack.length > 0) {
    const value = stack.pop()
    if (value === null || typeof value !== 'object') continue
    if (Array.isArray(value)) {
      stack.push(...value)
      continue
    }
    for (const [key, inner] of Object.entries(value)) {
      if (key === '$ref' && typeof inner === 'string') {
        const id = inner.split('#')[0]
        if (id !== '' && !found.has(id) && id in externalSchemas) {
          found.add(id)
          stack.push(externalSchemas[id])
        }
      } else {
        stack.push(inner)
      }
    }
  }
  return found
}
