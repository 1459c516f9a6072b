// Compiled validators and serializers, kept for the life of the process.
// Compiling every route's schemas is most of the time an app takes to start;
// a process that builds the app again (the tests, a restart in place) reuses
// what it compiled, as long as the shared schemas are the same. The built
// service compiles none: the build writes out each function's code
// (compiled/), and a start only finds them.

import { createHash } from 'node:crypto'

type Schema = Record<string, any>

/** The shared schemas as text: apps built with equal ones share their compiled functions. */
function fingerprint (externalSchemas: Record<string, unknown>): string {
  return JSON.stringify(Object.keys(externalSchemas).sort().map(id => externalSchemas[id]))
}

const stores = new Map<string, Map<string, Map<string, unknown>>>()
const texts = new WeakMap<Schema, string>()

/** A schema as text: routes build equal schemas afresh each time the app is built. */
export function textOf (schema: Schema): string {
  let text = texts.get(schema)
  if (text === undefined) {
    text = JSON.stringify(schema)
    texts.set(schema, text)
  }
  return text
}

export type CompiledKind = 'validator' | 'serializer'

/** What Fastify asked a compiler for: the build writes out the code of each (compiled/). */
export interface CompileRequest {
  kind: CompiledKind
  /** The route's part as Fastify gives it: its schema, method, url, and httpPart or httpStatus. */
  route: { schema: Schema } & Record<string, unknown>
  part: string
  externalSchemas: Record<string, unknown>
  rest: unknown[]
}

/** Functions made before the process started, found by the key of what they were made from. */
export interface Precompiled {
  find: (key: string, request: CompileRequest) => unknown
}

/**
 * The key of a compiled function: its kind, the request part, the ids of
 * the shared schemas at hand (the service's own: within one build, an id
 * names one schema), the compiler's options and the schema itself.
 */
export function compiledKey (kind: CompiledKind, part: string, externalIds: string, rest: string, text: string): string {
  return createHash('sha256').update(`${kind}\n${part}\n${externalIds}\n${rest}\n${text}`).digest('hex').slice(0, 32)
}

let compiledHere = 0

/** How many schemas this process has compiled itself, rather than found made at build time. */
export function compiledInProcess (): number {
  return compiledHere
}

/**
 * Wraps a compiler factory of Fastify's shape, so that a schema compiled once
 * (for one request part or status) is compiled only once per set of shared
 * schemas. Equal schemas share their compiled function. A function made at
 * build time (`precompiled`) is taken instead, when there is one.
 */
export function reusingCompiled<R extends { schema: Schema }, F> (
  factory: (externalSchemas: Record<string, unknown>, ...rest: any[]) => (route: R) => F,
  part: (route: R) => string,
  kind: CompiledKind,
  precompiled?: Precompiled
): (externalSchemas?: Record<string, unknown>, ...rest: any[]) => (route: R) => F {
  return (externalSchemas = {}, ...rest) => {
    const restText = JSON.stringify(rest)
    const ids = precompiled === undefined ? '' : Object.keys(externalSchemas).sort().join(' ')
    let shared: Map<string, Map<string, unknown>> | undefined
    let compile: ((route: R) => F) | undefined
    const compiled = (route: R): F => {
      compiledHere++
      compile ??= factory(externalSchemas, ...rest)
      return compile(route)
    }
    return route => {
      if (route.schema === null || typeof route.schema !== 'object') return compiled(route)
      const text = textOf(route.schema)
      const name = part(route)
      if (precompiled !== undefined) {
        const request = { kind, route: route as CompileRequest['route'], part: name, externalSchemas, rest }
        const found = precompiled.find(compiledKey(kind, name, ids, restText, text), request)
        if (found !== undefined) return found as F
      }
      if (shared === undefined) {
        const key = fingerprint(externalSchemas) + restText
        shared = stores.get(key) ?? new Map()
        stores.set(key, shared)
      }
      let byPart = shared.get(text)
      if (byPart === undefined) {
        byPart = new Map()
        shared.set(text, byPart)
      }
      if (!byPart.has(name)) byPart.set(name, compiled(route))
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
