import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Readable } from 'node:stream'

/** Aborts when the client goes away before the whole answer is sent. */
export function disconnectSignal (reply: FastifyReply): AbortSignal {
  const controller = new AbortController()
  const response = reply.raw
  if (response.destroyed) controller.abort(new Error('the client disconnected'))
  response.on('close', () => {
    if (!response.writableFinished) controller.abort(new Error('the client disconnected'))
  })
  return controller.signal
}

/**
 * Ends a streamed body once its export settles. An export that fails after
 * the headers went out can only cut the body short; one stopped because the
 * client left is not a failure (the route logs it).
 */
export function endWith (request: FastifyRequest, body: Readable, done: Promise<void>, signal: AbortSignal, end: () => void): void {
  done.then(end, error => {
    if (signal.aborted) {
      body.destroy()
      return
    }
    request.log.error({ err: error }, 'export failed while streaming')
    body.destroy(error as Error)
  })
}

/**
 * Calls `stalled` once the response's connection has had bytes waiting for
 * the client and taken none of them for `ms`: a client that stops reading
 * cannot keep a download open. While nothing waits to go out (the export is
 * still being built) the client is not behind, and the time does not count.
 * Answers a function that stops watching.
 */
export function watchProgress (reply: FastifyReply, ms: number, stalled: () => void): () => void {
  const socket = reply.raw.socket
  if (socket === null) return () => {}
  let written = socket.bytesWritten
  let since = Date.now()
  const timer = setInterval(() => {
    if (socket.bytesWritten !== written || socket.writableLength === 0) {
      written = socket.bytesWritten
      since = Date.now()
    } else if (Date.now() - since >= ms) {
      clearInterval(timer)
      stalled()
    }
  }, Math.min(1000, Math.max(50, ms / 4)))
  timer.unref()
  return () => clearInterval(timer)
}
