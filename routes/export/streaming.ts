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
