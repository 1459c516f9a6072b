import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { randomUUID } from 'node:crypto'
import { STATUS_CODES, type ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import { errors } from '../lib/errors'
import { answerFor, sendError, type ErrorBody } from './errors'
import { SECURITY_HEADERS } from './security'

/**
 * Answers for requests that never reach a route: a URL the router cannot
 * decode or whose parameter is too long (Fastify's `frameworkErrors`), and
 * requests Node's HTTP parser refuses or that arrive too slowly (its
 * `clientError`, answered on the raw socket). Each carries the error body,
 * a request id and the security headers like any other answer.
 */

/** Fastify's `frameworkErrors`: the reply has been through no hook, so it gets the headers here. */
export function frameworkErrors (production: boolean) {
  return function (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
    reply.headers({ ...SECURITY_HEADERS, 'x-request-id': request.id })
    sendError(reply, answerFor(error, request, production))
  }
}

function clientErrorBody (error: NodeJS.ErrnoException): { status: number, body: ErrorBody } {
  const own = error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
    ? new errors.requestTimeout('The request did not arrive in time')
    : error.code === 'HPE_HEADER_OVERFLOW'
      ? new errors.headersTooLarge('The request\'s URL and headers are larger than allowed')
      : new errors.invalidBody('The request is not valid HTTP')
  return { status: own.statusCode ?? 400, body: { error: own.message, code: own.code, details: {} } }
}

/** A whole HTTP answer as text, closing the connection. */
function rawAnswer (status: number, body: ErrorBody, headers: Record<string, string>): string {
  const json = JSON.stringify(body)
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}`,
    'content-type: application/json; charset=utf-8',
    `content-length: ${Buffer.byteLength(json)}`,
    'connection: close',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)
  ]
  return `${lines.join('\r\n')}\r\n\r\n${json}`
}

/**
 * Fastify's `clientErrorHandler`: Node's HTTP parser refused the request, or it
 * did not arrive within the request or header timeout. Nothing is written
 * when an answer has already begun on this connection.
 */
export function clientErrorHandler (this: FastifyInstance, error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  // Node's own handler checks the same: a response already under way cannot get another head.
  const response = (socket as Duplex & { _httpMessage?: ServerResponse })._httpMessage
  if (socket.writable && response?.headersSent !== true) {
    const { status, body } = clientErrorBody(error)
    const id = randomUUID()
    this.log.info({ reqId: id, statusCode: status, code: body.code, cause: error.code }, 'request refused before routing')
    socket.write(rawAnswer(status, body, { ...SECURITY_HEADERS, 'x-request-id': id }))
  }
  socket.destroy(error)
}
