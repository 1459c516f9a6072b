import { Type } from '@sinclair/typebox'
import type { Readable } from 'node:stream'
import { CLOCK_ETAG, Id, Nullable, StrictObject, Timestamp } from '../../lib/schemas'
import { KINDS } from '../../kinds'
import { nounOf } from '../../kinds/kind'

/** Each kind's list, in the registry's order. */
const kindLists = Object.fromEntries(KINDS.map(kind => [kind.key, Type.Array(Type.Ref(kind.schema.$id as string), {
  description: kind.descriptions?.exported ?? `every ${nounOf(kind)}, ${kind.defaultSort.startsWith('-') ? 'newest' : 'oldest'} first`
})]))

export const ChildExport = Type.Object({
  exportedAt: Timestamp,
  schemaVersion: Type.String({ description: 'the name of the last applied schema migration, e.g. 00000000-000000-base-schema.sql' }),
  child: Type.Ref('Child'),
  ...kindLists,
  attachments: Type.Array(Type.Ref('Attachment'), { description: 'every attachment, newest first' }),
  growth: Nullable(Type.Ref('Growth', { description: 'as GET /api/children/{childId}/growth answers it on the child\'s growthReference; null when that chart needs the WHO reference tables and they are missing' })),
  growthUnavailable: Nullable(Type.String({ description: 'why growth is null (the WHO reference tables are not installed); null when growth is there' }))
}, {
  $id: 'ChildExport',
  title: 'ChildExport',
  description: 'A child\'s whole record at one moment. Lists are complete and in the shapes and default orders of the child\'s routes.'
})

export const FhirBundle = Type.Object({
  resourceType: Type.String({ enum: ['Bundle'] }),
  type: Type.String({ enum: ['collection'] }),
  timestamp: Timestamp,
  entry: Type.Array(Type.Object({
    fullUrl: Type.String({ pattern: '^urn:uuid:[0-9a-f-]{36}$' }),
    resource: Type.Object({ resourceType: Type.String(), id: Type.String() }, { additionalProperties: true })
  }))
}, {
  $id: 'FhirBundle',
  title: 'FhirBundle',
  description: 'A FHIR R4 Bundle of type collection: the Patient, Encounters, vital-signs Observations, Conditions, Immunizations, Procedures, MedicationStatements and DocumentReferences. Every resource has a stable urn:uuid fullUrl.'
})

export const ChildExportParams = StrictObject({ childId: Id })

export const ChildExportQuery = Type.Object({
  format: Type.Optional(Type.String({ enum: ['json', 'fhir'], default: 'json', description: '`json` (the default): the ChildExport document; `fhir`: a FHIR R4 Bundle' }))
})

export const FamilyExportParams = StrictObject({ id: Id })

const disposition = {
  'content-disposition': Type.String({ description: 'attachment, with a file name that names the child or family and the date' }),
  ETag: Type.String({ description: CLOCK_ETAG })
}

export const ChildExportResponse = {
  description: 'The child\'s record: a ChildExport document with format=json, a FHIR R4 Bundle with format=fhir',
  headers: disposition,
  content: {
    'application/json': { schema: Type.Ref('ChildExport') },
    'application/fhir+json': { schema: Type.Ref('FhirBundle') }
  }
}

export const FamilyExportResponse = {
  description: 'A ZIP archive: family.json (the family, its members\' names and roles, each child\'s ChildExport), fhir/<childId>.json (each child\'s FHIR bundle), files/<stored name> (every attachment and avatar), and manifest.json (export time, schema version, counts, SHA-256 of every other entry)',
  headers: disposition,
  content: {
    'application/zip': { schema: Type.Unsafe<Readable>({ type: 'string', format: 'binary' }) }
  }
}
