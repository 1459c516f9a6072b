import { Type, type Static } from '@sinclair/typebox'
import { KEY_PATTERN } from '../../lib/idempotency'
import { Id, Nullable, StrictObject } from '../../lib/schemas'

/** The most operations one batch holds. */
export const MAX_OPERATIONS = 500

export const BatchParams = StrictObject({ id: Id })

export const Operation = StrictObject({
  method: Type.String({ enum: ['POST', 'PUT', 'PATCH', 'DELETE'] }),
  path: Type.String({
    minLength: 1,
    maxLength: 2048,
    description: 'A path of the API without a query string, as the single request would have it: /api/children/7/measurements, /api/visits/12, /api/families/3/invites. Only JSON writes of this family\'s children, records and family routes'
  }),
  body: Type.Optional(Type.Unknown({ description: 'The JSON body of the single request; left out (or null) for none' })),
  ifMatch: Type.Optional(Nullable(Type.String({ maxLength: 200, description: 'Sent as the If-Match header: "3"' }))),
  idempotencyKey: Type.Optional(Nullable(Type.String({ pattern: KEY_PATTERN, description: 'Sent as the Idempotency-Key header of this operation' })))
}, { $id: 'BatchOperation', title: 'BatchOperation' })

export type OperationBody = Static<typeof Operation>

export const BatchBody = StrictObject({
  atomic: Type.Optional(Type.Boolean({ default: false, description: 'true: all operations in one transaction, written together or not at all; false (the default): each on its own' })),
  operations: Type.Array(Type.Ref('BatchOperation'), { minItems: 1, maxItems: MAX_OPERATIONS })
})

export const OperationResult = Type.Object({
  status: Type.Integer({ description: 'The status the single request would have answered; 424 for an operation of an atomic batch not run because an earlier one failed' }),
  body: Type.Unknown({ description: 'The body of that answer, or null for none (204). An error has the error body; a 412\'s details hold currentVersion and current, the item as its GET answers it now (null when it is gone)' }),
  etag: Type.Optional(Type.String({ description: 'The ETag of that answer or, for a write that answered its item, the item\'s ETag as its GET would answer it ("3"): the version to send as ifMatch next' })),
  location: Type.Optional(Type.String({ description: 'The Location of a create' }))
}, { $id: 'BatchResult', title: 'BatchResult' })

export type Result = Static<typeof OperationResult>

export const BatchAnswer = Type.Object({
  results: Type.Array(Type.Ref('BatchResult'), { description: 'One result an operation, in their order' }),
  rolledBack: Type.Boolean({ description: 'true when an atomic batch wrote nothing because an operation failed' }),
  failedOperation: Nullable(Type.Integer({ minimum: 0, description: 'The index (from 0) of the operation whose failure rolled an atomic batch back' }))
}, { $id: 'BatchAnswer', title: 'BatchAnswer' })

export const batchSchemas = [Operation, OperationResult, BatchAnswer]
