import type { FastifyReply, FastifyRequest } from 'fastify'
import { Readable } from 'node:stream'

/**
 * Fastify answers HEAD with the GET's route: its hooks (authentication, the
 * family scope, the ETag and its 304) run as for a GET. A handler whose GET
 * streams what it builds answers a HEAD with its headers alone and builds
 * nothing.
 */
export function isHead (request: FastifyRequest): boolean {
  return request.method === 'HEAD'
}

/**
 * Sends the headers set on the reply, without a body. An empty stream rather
 * than no payload: a HEAD then says no Content-Length, as its GET, which is
 * streamed, says none.
 */
export function headersOnly (reply: FastifyReply): FastifyReply {
  return reply.send(Readable.from([]))
}
