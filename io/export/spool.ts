import { createReadStream, createWriteStream, type ReadStream } from 'node:fs'
import { rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { Readable } from 'node:stream'
import { finished } from 'node:stream/promises'
import { temporaryName } from '../../lib/files/names'
import { Output } from '../../lib/export/output'

interface Section {
  start: number
  end: number
}

/**
 * A temporary file that an export is written into while its database
 * snapshot is open, and streamed from once the snapshot is closed: a slow
 * client then holds a file, never a database connection. Each writer and
 * reader opens the file on its own and closes it when it ends; the file is
 * removed when the spool closes (a killed process leaves it to the sweep of
 * temporary files).
 */
export class Spool {
  private size = 0
  private readonly sections = new Map<string, Section>()
  private readonly readers = new Set<ReadStream>()
  private closing: Promise<void> | null = null

  private constructor (private readonly file: string) {}

  static async open (dir: string): Promise<Spool> {
    const file = path.join(dir, temporaryName())
    await writeFile(file, '', { flag: 'wx', mode: 0o600 })
    return new Spool(file)
  }

  /** Writes one named section as `produce` writes it; answers what `produce` answers. */
  async write<T> (name: string, signal: AbortSignal, produce: (out: Output) => Promise<T>): Promise<T> {
    const stream = createWriteStream(this.file, { flags: 'r+', start: this.size })
    let result: T
    try {
      result = await produce(new Output(stream, signal))
      stream.end()
      await finished(stream)
    } catch (error) {
      stream.destroy()
      throw error
    }
    this.sections.set(name, { start: this.size, end: this.size + stream.bytesWritten })
    this.size += stream.bytesWritten
    return result
  }

  /** The bytes of a section, read back from the file. */
  read (name: string): Readable {
    const section = this.sections.get(name)
    if (section === undefined) throw new Error(`no section ${name} in the spool`)
    if (section.end === section.start) return Readable.from([])
    const stream = createReadStream(this.file, { start: section.start, end: section.end - 1 })
    this.readers.add(stream)
    stream.once('close', () => this.readers.delete(stream))
    return stream
  }

  /** Ends every reader still open and removes the file. */
  close (): Promise<void> {
    this.closing ??= (async () => {
      for (const reader of this.readers) reader.destroy()
      await rm(this.file, { force: true })
    })()
    return this.closing
  }
}
