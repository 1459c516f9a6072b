import type { Readable } from 'node:stream'
import type { Tx } from '../client'

/**
 * `copy ... to stdout` as a stream. postgres.js pauses its socket when the
 * stream's buffer is full and resumes it only when the stream is read again.
 * When the end of the copy arrives in the same read from the socket, the
 * stream ends without being read again and the socket stays paused: the next
 * query on that connection is never answered. The socket is resumed once the
 * stream is done (the stream's own read hook does it).
 */
export async function copyOut (tx: Tx, statement: string): Promise<Readable> {
  const rows: Readable = await tx.unsafe(statement).readable()
  rows.once('close', () => rows._read(0))
  return rows
}
