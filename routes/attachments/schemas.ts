import { Type } from '@sinclair/typebox'
import { Id, Nullable, Pagination, StrictObject, Timestamp, Version } from '../../lib/schemas'

export const Attachment = Type.Object({
  id: Id,
  childId: Id,
  visitId: Nullable(Id),
  measurementId: Nullable(Id),
  illnessId: Nullable(Id),
  fileName: Type.String({ description: 'the name the file was uploaded with, cleaned of paths and control characters' }),
  contentType: Type.String({ description: 'detected from the file\'s bytes' }),
  sizeBytes: Type.Integer({ minimum: 0 }),
  url: Type.String({ description: 'root-relative, /uploads/<stored name>; a capability link that needs no token' }),
  version: Version,
  createdAt: Timestamp
}, { $id: 'Attachment', title: 'Attachment' })

const links = {
  visitId: Type.Optional(Id),
  measurementId: Type.Optional(Id),
  illnessId: Type.Optional(Id)
}

export const AttachmentListQuery = Type.Object({
  ...Pagination,
  ...links,
  sort: Type.Optional(Type.String({ description: 'comma-separated fields among createdAt, fileName, sizeBytes, each optionally prefixed with - (default -createdAt); ties are broken by id' }))
})

/**
 * The multipart body: the file and optional links to a record of the same
 * child. The text fields are converted like query strings.
 */
export const UploadAttachmentBody = StrictObject({
  file: Type.String({ format: 'binary', description: 'JPEG, PNG, WebP, GIF, HEIC or PDF, at most MAX_FILE_SIZE bytes' }),
  ...links
})

export const ChildParams = StrictObject({ childId: Id })
export const AttachmentParams = StrictObject({ id: Id })
