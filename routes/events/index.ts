import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { randomBytes } from 'node:crypto'
import { decodeCursor, type Cursor } from '../../kinds/changes'
import { errors, withDetails } from '../../lib/errors'
import { errorResponses, operations } from '../../lib/schemas'
import { STREAMS_PER_USER } from '../../plugins/change-events'
import { createTicket, redeemTicket, sessionsStillActive, TICKET_TTL } from '../../sql/tickets'
import { headersOnly, isHead } from '../head'
import { EventStreamResponse, EventTicket, EventsHeaders, EventsQuery, IdParams, TicketBody } from './schemas'

function badCursor (path: string, message: string): Error {
  return withDetails(new errors.validation('The request is not valid'), { issues: [{ path, message }] })
}

/**
 * Where a stream resumes: after Last-Event-ID, or after `since`, or null for
 * only what comes. Checked like the changes feed's `since`.
 */
function resumeCursor (header: string | string[] | undefined, since: string | undefined, familyId: number): { cursor: Cursor, path: string } | null {
  const given = typeof header === 'string' && header !== ''
    ? { text: header, path: '/headers/last-event-id' }
    : since !== undefined ? { text: since, path: '/query/since' } : null
  if (given === null) return null
  const cursor = decodeCursor(given.text)
  if (cursor === null) throw badCursor(given.path, 'is not a cursor of this service')
  if (cursor.familyId !== familyId) throw badCursor(given.path, 'is a cursor of another family')
  return { cursor, path: given.path }
}

function streamHeaders (reply: FastifyReply): FastifyReply {
  return reply.header('cache-control', 'no-store').header('x-accel-buffering', 'no').type('text/event-stream')
}

/**
 * Live updates: a family's changes as a `text/event-stream`, and the tickets
 * that let a browser's EventSource, which cannot send headers, open one.
 * Registered outside the protected scope: a stream is opened with a bearer
 * token or with a ticket.
 */
const events: FastifyPluginAsyncTypebox = async function (fastify) {
  // The streams' registry and its listening connection serve these routes alone.
  const { tokens, changeEvents } = fastify
  const tags = ['changes']
  const operation = operations(tags)
  const anyMember = fastify.familyScope({ target: { family: 'params.id' }, role: 'viewer' })

  /** A ticket in the query string stands for its session, once; otherwise the bearer token does. */
  async function ticketOrBearer (request: FastifyRequest): Promise<void> {
    const ticket = (request.query as { ticket?: unknown }).ticket
    if (typeof ticket !== 'string' || ticket === '') return fastify.authenticate(request)
    const redeemed = await redeemTicket(request.db, tokens.hash(ticket))
    if (redeemed === undefined) throw new errors.unauthorized('The ticket is not valid: unknown, used or expired')
    if (String(redeemed.familyId) !== (request.params as { id?: string }).id) throw new errors.unauthorized('The ticket is for another family')
    const [session] = await sessionsStillActive(request.db, [redeemed.sessionId])
    if (session === undefined) throw new errors.unauthorized('The session has ended')
    request.user = { id: session.userId, role: session.role, sessionId: session.id, token: session.token }
  }

  fastify.post('/api/families/:id/events/tickets', {
    // It only reads: a read token may open the stream with a ticket too.
    // A ticket opens a stream: not a write a batch runs.
    config: { personalTokens: 'reads', batch: false },
    onRequest: fastify.authenticate,
    preHandler: anyMember,
    schema: operation('createEventTicket', 'A single-use ticket to open the family\'s event stream without headers', {
      description: `For browsers' EventSource: \`new EventSource('/api/families/{id}/events?ticket=...')\`. The ticket is good once, within ${TICKET_TTL} s, for this family's stream only, and stands for the caller's session: the stream ends with it. Any member may ask, viewers included.`,
      params: IdParams, body: TicketBody,
      response: { 201: EventTicket, ...errorResponses(400, 401, 403, 404) }
    })
  }, async (request, reply) => {
    const ticket = randomBytes(32).toString('base64url')
    await createTicket(request.db, {
      tokenHash: tokens.hash(ticket),
      userId: request.user.id,
      sessionId: request.user.sessionId,
      familyId: request.scope.familyId
    })
    return reply.code(201).header('cache-control', 'no-store').send({ ticket, expiresIn: TICKET_TTL })
  })

  fastify.get('/api/families/:id/events', {
    onRequest: ticketOrBearer,
    preHandler: anyMember,
    schema: operation('streamFamilyEvents', 'The family\'s changes, live, as server-sent events', {
      description: 'Authenticated with a bearer token, or with `ticket` (see createEventTicket). Without `since` or Last-Event-ID, the changes committed after the stream opened; with one, every change after that cursor first, none lost and none twice. ' +
        'A cursor is refused (400) when it is malformed, of another family, or from before the family\'s data was restored; then read the changes feed again without `since`. ' +
        'A ticket is good once: a client that reconnects with a ticket asks for a new one and passes the last event\'s id as `since`. ' +
        `At most ${STREAMS_PER_USER} streams per user are open at once on an instance (429 with Retry-After beyond). A client that leaves 1 MiB unread is cut off. HEAD answers the headers of a stream and opens none.`,
      params: IdParams, querystring: EventsQuery, headers: EventsHeaders,
      response: { 200: EventStreamResponse, ...errorResponses(400, 401, 403, 404, 429) }
    })
  }, async (request, reply) => {
    const { familyId, role } = request.scope
    const resume = resumeCursor(request.headers['last-event-id'], request.query.since, familyId)
    if (isHead(request)) return headersOnly(streamHeaders(reply))
    const stream = await changeEvents.open(reply, { familyId, role, userId: request.user.id, sessionId: request.user.sessionId })
    if (resume !== null && resume.cursor.epoch !== stream.clock.epoch) {
      stream.cancel()
      throw badCursor(resume.path, 'is from before the family\'s data was restored: read the changes again without since')
    }
    stream.start(resume === null ? stream.position : { xid: resume.cursor.xid, seq: resume.cursor.seq })
    return streamHeaders(reply).send(stream.body)
  })
}

export default events
