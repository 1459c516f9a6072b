import { open, unlink, type FileHandle } from 'node:fs/promises'
import path from 'node:path'
import { Readable } from 'node:stream'
import { finished } from 'node:stream/promises'
import { temporaryName } from '../files/names'
import { Output } from './output'

interface Section {
  start: number
  end: number
}

/**
 * A temporary file that an export is written into while its database
 * snapshot is open, and streamed from once the snapshot is closed: a slow
 * client then holds a file handle, never a database connection. The file's
 * name is removed as soon as it is opened, so nothing is left behind, by a
 * killed process neither; its space is freed when it is closed.
 */
export class Spool {
  private size = 0
  private readonly sections = new Map<string, Section>()
  private closing: Promise<void> | null = null

  private constructor (private readonly handle: FileHandle) {}

  static async open (dir: string): Promise<Spool> {
    const file = path.join(dir, temporaryName())
    const handle = await open(file, 'wx+', 0o600)
    await unlink(file).catch(async error => {
      await handle.close()
      throw error
    })
    return new Spool(handle)
  }

  /** Writes one named section as `produce` writes it; answers what `produce` answers. */
  async write<T> (name: string, signal: AbortSignal, produce: (out: Output) => Promise<T>): Promise<T> {
    const stream = this.handle.createWriteStream({ start: this.size, autoClose: false, emitClose: false })
    let result: T
    try {
      result = await produce(new Output(stream, signal))
    } catch (error) {
      stream.destroy()
      throw error
    }
    stream.end()
    await finished(stream)
    this.sections.set(name, { start: this.size, end: this.size + stream.bytesWritten })
    this.size += stream.bytesWritten
    return result
  }

  /** The bytes of a section, read back from the file. */
  read (name: string): Readable {
    const section = this.sections.get(name)
    if (section === undefined) throw new Error(`no section ${name} in the spool`)
    if (section.end === section.start) return Readable.from([])
    return this.handle.createReadStream({ start: section.start, end: section.end - 1, autoClose: false, emitClose: false })
  }

  close (): Promise<void> {
    this.closing ??= this.handle.close().catch(() => {})
    return this.closing
  }
}
