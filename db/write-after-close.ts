/**
 * Two errors of postgres.js that no caller can catch are contained here.
 *
 * postgres.js 3.4 can write to a connection whose socket is already gone:
 * when a backend dies while a transaction waits on it, postgres.js rejects the
 * transaction and then writes its own ROLLBACK, from a setImmediate callback,
 * to the closed connection (porsager/postgres#1154, #1208; fixes open as
 * #1168, #1209). The TypeError it throws there reaches no caller and would
 * end the process, although every query involved has already been settled.
 *
 * This contains exactly that error, recognised by its message and its first
 * stack frame, and logs it. Any other uncaught exception is left as it was:
 * to the process's other handlers when it has some, otherwise printed with
 * its stack and the process exits with code 1, as Node does by default.
 *
 * It can also reject a promise nobody waits for with the error of a lost
 * connection: its own (CONNECTION_CLOSED, created in its connection.js), or
 * the socket's, as Node raised it (ECONNRESET, ECONNREFUSED), when the
 * database goes away while a new connection reads its array types
 * (fetchArrayTypes, which no caller awaits). Those are logged too. Any other
 * unhandled rejection is an uncaught exception, as Node makes it by default.
 */
const MESSAGE = "Cannot read properties of null (reading 'write')"
const FRAME = /^\s+at (?:\S+\.)?nextWrite \(.*[\\/]postgres[\\/](?:cjs[\\/])?src[\\/]connection\.js:\d+:\d+\)$/

export function isWriteAfterClose (error: unknown): boolean {
  if (!(error instanceof TypeError) || error.message !== MESSAGE) return false
  const frame = (error.stack ?? '').split('\n')[1] ?? ''
  return FRAME.test(frame)
}

const CONNECTION_CODES = new Set(['CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'CONNECTION_ENDED', 'CONNECT_TIMEOUT'])
const FROM_CONNECTION = /[\\/]postgres[\\/](?:cjs[\\/])?src[\\/]connection\.js:\d+/

const SOCKET_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH'])
const SOCKET_CALLS = new Set(['read', 'write', 'connect'])

/** Whether every frame of a stack is in Node's own code: an error a socket raised, not one made by a caller. */
function fromNodeOnly (stack: string): boolean {
  const frames = stack.split('\n').filter(line => /^\s+at /.test(line))
  return frames.length > 0 && frames.every(line => /\(node:[^)]+\)$|^\s+at node:\S+$/.test(line))
}

/**
 * A lost connection's error that postgres.js rejected a promise with nobody
 * waits for: the query it belonged to has failed already, or never began.
 * Its own error (CONNECTION_CLOSED and the like), or the socket's error as
 * Node raised it.
 */
export function isStrayConnectionError (reason: unknown): boolean {
  if (!(reason instanceof Error)) return false
  const { code, syscall } = reason as { code?: unknown, syscall?: unknown }
  if (typeof code !== 'string') return false
  if (CONNECTION_CODES.has(code)) return FROM_CONNECTION.test(reason.stack ?? '')
  return SOCKET_CODES.has(code) && typeof syscall === 'string' && SOCKET_CALLS.has(syscall) && fromNodeOnly(reason.stack ?? '')
}

let warn: (message: string) => void = () => {}
let installed = false

export function containWriteAfterClose (log: (message: string) => void): void {
  warn = log
  if (installed) return
  installed = true
  process.on('uncaughtException', function containment (error) {
    if (isWriteAfterClose(error)) {
      warn('a database connection closed while postgres.js wrote to it; its queries had already failed')
      return
    }
    if (process.listeners('uncaughtException').some(listener => listener !== containment)) return
    process.stderr.write(`${error instanceof Error ? error.stack ?? String(error) : String(error)}\n`)
    process.exit(1)
  })
  process.on('unhandledRejection', reason => {
    if (isStrayConnectionError(reason)) {
      warn(`a database connection was lost with nobody waiting on it: ${(reason as Error).message}`)
      return
    }
    // As Node does without a listener: the rejection becomes an uncaught exception.
    throw reason
  })
}
