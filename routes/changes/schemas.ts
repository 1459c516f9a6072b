import { Type } from '@sinclair/typebox'
import { KINDS } from '../../kinds'
import { CHANGE_KINDS } from '../../kinds/changes'
import { Id, ListOf, Nullable, Pagination, StrictObject, Timestamp, Version } from '../../lib/schemas'

/** The schemas of the records that change. */
const RECORD_NAMES = ['Family', 'Member', 'Child', ...KINDS.map(kind => kind.schema.$id as string), 'Attachment']

const Op = Type.String({ enum: ['created', 'updated', 'deleted'] })

export const Change = Type.Object({
  cursor: Type.String({ description: 'opaque; ask for the changes after it with since=' }),
  kind: Type.String({ enum: [...CHANGE_KINDS], description: ['what changed', ...KINDS.flatMap(kind => kind.descriptions?.change ?? [])].join('; ') }),
  id: Id,
  childId: Nullable(Id),
  op: Op,
  version: Version,
  at: Timestamp,
  userId: Nullable(Id),
  record: Nullable(Type.Object({}, {
    additionalProperties: true,
    description: `the record after the change, in the shape its GET answers (${RECORD_NAMES.join(', ')}); null when deleted. A family's role is the reader's`
  }))
}, { $id: 'Change', title: 'Change' })

export const ChangeFeed = Type.Object({
  data: Type.Array(Type.Ref('Change')),
  meta: Type.Object({
    limit: Type.Integer({ minimum: 1 }),
    nextCursor: Type.String({ description: 'where to go on from: the cursor of the last change answered, or the one asked with when there was none' }),
    hasMore: Type.Boolean()
  })
}, { $id: 'ChangeFeed', title: 'ChangeFeed' })

export const ChangesQuery = Type.Object({
  since: Type.Optional(Type.String({ description: 'a cursor: only the changes after it; without it, from the first change' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 500 }))
})

export const FieldChange = Type.Object({
  from: Type.Unknown({ description: 'the value before, null for a created item' }),
  to: Type.Unknown({ description: 'the value after, null for a deleted item' })
})

export const HistoryEntry = Type.Object({
  version: Version,
  op: Op,
  at: Timestamp,
  user: Nullable(Type.Object({ id: Id, name: Type.String() }, { description: 'who made the change; null for the command line, administrators and deleted users' })),
  fields: Type.Record(Type.String(), FieldChange, { description: 'the fields the change altered, by name' })
}, { $id: 'HistoryEntry', title: 'HistoryEntry' })

export const HistoryEntryList = ListOf('HistoryEntry')

export const HistoryQuery = Type.Object({ ...Pagination })

export const IdParams = StrictObject({ id: Id })
