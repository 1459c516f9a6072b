import { createHash } from 'node:crypto'
import { open, type FileHandle } from 'node:fs/promises'
import { Transform, type Readable, type TransformCallback } from 'node:stream'
import { finished, pipeline } from 'node:stream/promises'
import type * as Yazl from 'yazl'
import { Output } from '../../lib/export/output'

/** An entry of the archive: its path, its size and the SHA-256 of its bytes. */
export interface ArchivedFile {
  path: string
  size: number
  sha256: string
}

/** Passes bytes through while counting them and taking their SHA-256. */
export class Digest extends Transform {
  size = 0
  private readonly hash = createHash('sha256')

  override _transform (chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.size += chunk.length
    this.hash.update(chunk)
    done(null, chunk)
  }

  sha256 (): string {
    return this.hash.digest('hex')
  }
}

async function openFile (path: string): Promise<FileHandle | null> {
  try {
    return await open(path, 'r')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
}

/**
 * A ZIP archive written as its reader takes it. An entry is added only once
 * the one before is written, so at most one file is open at a time and memory
 * does not grow with the size of the files. Stored files are not compressed
 * again; JSON is.
 */
export class ZipWriter {
  readonly files: ArchivedFile[] = []
  readonly signal: AbortSignal
  // Loaded at the first archive, not at every start.
  private readonly zip = new (require('yazl') as typeof Yazl).ZipFile()
  private readonly failed = new AbortController()

  constructor (signal: AbortSignal, private readonly mtime: Date) {
    this.zip.on('error', error => this.failed.abort(error))
    this.signal = AbortSignal.any([signal, this.failed.signal])
  }

  get output (): Readable {
    return this.zip.outputStream as Readable
  }

  private entry (path: string, compress: boolean): Digest {
    const digest = new Digest()
    this.zip.addReadStream(digest, path, { mtime: this.mtime, compress })
    return digest
  }

  private async written (path: string, digest: Digest): Promise<void> {
    try {
      await finished(digest, { readable: false, signal: this.signal })
    } catch (error) {
      digest.destroy()
      throw error
    }
    this.files.push({ path, size: digest.size, sha256: digest.sha256() })
  }

  /** An entry whose bytes `produce` writes. */
  async write (path: string, produce: (out: Output) => Promise<void>): Promise<void> {
    const digest = this.entry(path, true)
    try {
      await produce(new Output(digest, this.signal))
    } catch (error) {
      digest.destroy()
      throw error
    }
    digest.end()
    await this.written(path, digest)
  }

  /** A compressed entry of the bytes a stream gives. */
  async stream (path: string, source: Readable): Promise<void> {
    const digest = this.entry(path, true)
    try {
      await pipeline(source, digest, { signal: this.signal })
    } catch (error) {
      source.destroy()
      digest.destroy()
      throw error
    }
    await this.written(path, digest)
  }

  /** An entry streamed from a file on disk; false when there is no such file. */
  async copy (path: string, filePath: string): Promise<boolean> {
    const handle = await openFile(filePath)
    if (handle === null) return false
    const digest = this.entry(path, false)
    try {
      await pipeline(handle.createReadStream({ autoClose: false }), digest, { signal: this.signal })
    } finally {
      await handle.close()
    }
    await this.written(path, digest)
    return true
  }

  /** Writes the central directory and waits until the reader has taken every byte. */
  async finish (): Promise<void> {
    this.zip.end()
    await finished(this.output, { writable: false, signal: this.signal })
  }
}
