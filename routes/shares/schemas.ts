import { Type, type Static } from '@sinclair/typebox'
import { SUMMARY_SECTIONS } from '../../lib/fhir'
import { Id, Name, Nullable, Pagination, Secret, StrictObject, Timestamp } from '../../lib/schemas'
import { LABEL_MAX } from '../../lib/shares/link'

/** Sections a link carries when it names none: everything but the files. */
export const DEFAULT_SECTIONS = SUMMARY_SECTIONS.filter(section => section !== 'attachments')

/** The longest a link may live, in days. */
export const MAX_DAYS = 365

export const SHARE_STATUSES = ['active', 'expired', 'revoked', 'locked'] as const

export const Section = Type.String({ enum: [...SUMMARY_SECTIONS] })

export const ShareAccess = Type.Object({
  at: Timestamp,
  recipient: Type.String({ description: 'who the viewer said it was, as it sent `recipient`' }),
  address: Nullable(Type.String({ description: 'the client address the request came from' })),
  outcome: Type.String({
    enum: ['served', 'passcode-missing', 'passcode-wrong', 'busy', 'refused'],
    description: 'served; refused for want of the passcode, for a wrong one, or while the link\'s last passcode checks were in flight (429); refused because the link had ended'
  })
}, { title: 'ShareAccess' })

const shareFields = {
  id: Id,
  childId: Id,
  label: Type.String(),
  sections: Type.Array(Section),
  expiresAt: Timestamp,
  passcode: Type.Boolean({ description: 'whether the link needs a passcode' }),
  remainingAttempts: Nullable(Type.Integer({ minimum: 0, maximum: 10, description: 'wrong passcodes the link still takes; null without a passcode' })),
  status: Type.String({ enum: [...SHARE_STATUSES], description: 'active; expired; revoked (DELETE); locked by its tenth wrong passcode. Only an active link answers' }),
  createdAt: Timestamp,
  revokedAt: Nullable(Timestamp),
  createdBy: Nullable(Type.Object({ id: Id, name: Type.String() }, { description: 'who made it; null once that account is gone' })),
  accessCount: Type.Integer({ minimum: 0, description: 'manifest requests of the link, served or refused' }),
  lastAccessAt: Nullable(Timestamp),
  accesses: Nullable(Type.Array(ShareAccess, {
    description: 'the latest 100 manifest requests, newest first; shown to the family\'s owners and to the member who made the link, null for other members'
  }))
}

export const Share = Type.Object(shareFields, {
  $id: 'Share',
  title: 'Share',
  description: 'A SMART Health Link to a snapshot of a child\'s record, without its secrets: the link itself is shown only when it is made'
})

export const CreatedShare = Type.Object({
  ...shareFields,
  link: Type.String({ description: 'the shlink:/ URI (SMART Health Links), shown only here: it holds the key of the encrypted summary, which the service does not keep' }),
  qr: Type.String({ description: 'a PNG QR code as a data URL (data:image/png;base64,...) of <PUBLIC_URL>/share#<link>, or of the bare link without PUBLIC_URL' })
}, { $id: 'CreatedShare', title: 'CreatedShare' })

export const CreateShareBody = StrictObject({
  label: Name(LABEL_MAX),
  expiresAt: Type.String({ format: 'date-time', description: `when the link stops working: in the future, at most ${MAX_DAYS} days ahead` }),
  passcode: Type.Optional(Nullable(Secret({ minLength: 4, 'x-max-bytes': 72, description: '4 characters to 72 bytes; never trimmed; only its bcrypt hash is kept' }))),
  sections: Type.Optional(Type.Array(Section, {
    minItems: 1,
    maxItems: SUMMARY_SECTIONS.length,
    uniqueItems: true,
    description: `what the summary holds; default ${DEFAULT_SECTIONS.join(', ')} (everything but attachments)`
  }))
})
export type CreateShareBody = Static<typeof CreateShareBody>

export const ChildParams = StrictObject({ childId: Id })
export const ShareParams = StrictObject({ id: Id })

export const ShareListQuery = Type.Object({
  ...Pagination,
  status: Type.Optional(Type.String({ enum: [...SHARE_STATUSES] })),
  sort: Type.Optional(Type.String({ description: 'comma-separated fields among createdAt, expiresAt, each optionally prefixed with - (default -createdAt); ties are broken by id' }))
})
