// Values made from a JSON schema, to hold two validators or serializers of
// the same schema side by side: one that fills every property, and ones that
// break it in the ways the service's own keywords and formats look at.

type Schema = Record<string, any>

function resolve (schema: Schema, externalSchemas: Record<string, unknown>): Schema {
  let current = schema
  for (let depth = 0; depth < 20 && typeof current?.$ref === 'string'; depth++) {
    const [id, pointer = ''] = current.$ref.split('#')
    let target: any = id === '' ? undefined : externalSchemas[id]
    for (const step of pointer.split('/').filter(Boolean)) target = target?.[step]
    if (target === undefined) return {}
    current = target
  }
  return current ?? {}
}

function firstType (schema: Schema): string | undefined {
  return Array.isArray(schema.type) ? schema.type.find((type: string) => type !== 'null') : schema.type
}

/** A value that fills every property of the schema with a plausible one. */
export function filled (schema: Schema, externalSchemas: Record<string, unknown>, depth = 0): unknown {
  schema = resolve(schema, externalSchemas)
  if (depth > 8) return null
  if (schema.const !== undefined) return schema.const
  if (Array.isArray(schema.enum)) return schema.enum[0]
  if (schema.default !== undefined && firstType(schema) !== 'object') return schema.default
  for (const list of ['anyOf', 'oneOf', 'allOf']) {
    if (Array.isArray(schema[list]) && schema[list].length > 0) return filled(schema[list][0], externalSchemas, depth + 1)
  }
  switch (firstType(schema)) {
    case 'object':
      return Object.fromEntries(Object.entries((schema.properties ?? {}) as Record<string, Schema>).map(([name, property]) => [name, filled(property, externalSchemas, depth + 1)]))
    case 'array':
      return schema.items === undefined ? [] : [filled(schema.items, externalSchemas, depth + 1)]
    case 'integer': return Math.max(2, schema.minimum ?? 0)
    case 'number': return Math.max(1.5, schema.minimum ?? 0)
    case 'boolean': return true
    case 'null': return null
    case 'string':
      if (schema.format === 'date') return '2020-02-29'
      if (schema.format === 'date-time') return '2020-02-29T12:00:00.000Z'
      if (schema.format === 'uri' || schema.format === 'url') return 'https://example.org/hook'
      if (schema.format === 'email') return 'someone@example.org'
      if (schema.format === 'uuid') return '123e4567-e89b-42d3-a456-426614174000'
      return 'x'.repeat(Math.max(1, schema.minLength ?? 1))
    default:
      return 'x'
  }
}

/** Values each property of an object may take that a validator refuses, converts or looks at twice. */
const ODD_VALUES: unknown[] = [
  null, '', ' 7 ', '07', '0x1', '1e2', '7', 7, -1, 1.23456789, 'a\u0000b', '0000-01-01', '10000-01-01', '2020-02-30',
  '0001-01-01T00:00:00Z', 'http://127.0.0.1/', 'http://user:pass@example.org/', 'not a url', 'é'.repeat(80), [], {}, true
]

/** The filled value and, for an object, each property replaced by each odd value and each left out; then values of no shape at all. */
export function samples (schema: Schema, externalSchemas: Record<string, unknown>): unknown[] {
  const base = filled(schema, externalSchemas)
  const values: unknown[] = [base, {}, null, [], 'text', 1]
  if (base !== null && typeof base === 'object' && !Array.isArray(base)) {
    for (const name of Object.keys(base)) {
      const { [name]: _left, ...without } = base as Record<string, unknown>
      values.push(without)
      for (const odd of ODD_VALUES) values.push({ ...base, [name]: odd })
    }
  }
  return values
}
