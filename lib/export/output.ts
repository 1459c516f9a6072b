import type { Writable } from 'node:stream'

/** Waits until a stream takes more data; fails when it closes or the export is stopped. */
function drained (stream: Writable, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (error?: unknown): void => {
      stream.off('drain', onDrain)
      stream.off('close', onClose)
      signal.removeEventListener('abort', onAbort)
      if (error === undefined) resolve()
      else reject(error)
    }
    const onDrain = (): void => done()
    const onClose = (): void => done(new Error('the output closed before the export ended'))
    const onAbort = (): void => done(signal.reason)
    stream.on('drain', onDrain)
    stream.on('close', onClose)
    signal.addEventListener('abort', onAbort)
  })
}

/**
 * Text written to a stream as fast as its reader takes it: a write waits while
 * the stream is full, and fails once the export is stopped.
 */
export class Output {
  constructor (readonly stream: Writable, readonly signal: AbortSignal) {}

  async write (text: string): Promise<void> {
    this.signal.throwIfAborted()
    if (text === '') return
    if (!this.stream.write(text)) await drained(this.stream, this.signal)
  }

  /** A JSON array from batches of items; answers how many items it held. */
  async array (batches: AsyncIterable<unknown[]>): Promise<number> {
    let count = 0
    await this.write('[')
    for await (const batch of batches) {
      if (batch.length === 0) continue
      const items = batch.map(item => JSON.stringify(item)).join(',')
      await this.write(count === 0 ? items : `,${items}`)
      count += batch.length
    }
    await this.write(']')
    return count
  }
}
