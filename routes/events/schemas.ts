import { Type } from '@sinclair/typebox'
import type { Readable } from 'node:stream'
import { Id, StrictObject } from '../../lib/schemas'

export const IdParams = StrictObject({ id: Id })

export const EventsQuery = Type.Object({
  ticket: Type.Optional(Type.String({ description: 'a ticket from POST /api/families/{id}/events/tickets, instead of the Authorization header (browsers\' EventSource cannot send headers); good once, for 60 s' })),
  since: Type.Optional(Type.String({ description: 'a cursor: first every change after it, then the new ones; Last-Event-ID wins when both are given' }))
})

export const EventsHeaders = Type.Object({
  'last-event-id': Type.Optional(Type.String({ description: 'the id of the last event received: the stream resumes after it, nothing lost (EventSource sends it when it reconnects)' }))
})

export const EventStreamResponse = {
  description: 'A text/event-stream. Each change of the family is an event `change` whose id is its cursor and whose data is the Change as JSON, one line. ' +
    'Comment lines (`: keep-alive`) come every 25 s (EVENT_KEEPALIVE). The stream ends when the session ends, the caller leaves or is removed from the family (after the event saying so), or the family is deleted.',
  headers: {
    'cache-control': Type.String({ description: 'no-store' })
  },
  content: {
    'text/event-stream': { schema: Type.Unsafe<Readable>({ type: 'string', description: 'event: change\\nid: <cursor>\\ndata: <Change JSON>\\n\\n, repeated' }) }
  }
}

export const TicketBody = StrictObject({}, { description: 'empty; may be left out' })

export const EventTicket = Type.Object({
  ticket: Type.String({ description: 'single use, for ?ticket= on GET /api/families/{id}/events of this family only' }),
  expiresIn: Type.Integer({ description: 'seconds the ticket may be used in', minimum: 1 })
})
