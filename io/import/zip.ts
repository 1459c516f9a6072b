import { createWriteStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { pipeline as nodePipeline, type Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import yauzl, { type Entry, type ZipFile } from 'yauzl'
import { Digest } from '../export/zip'

/** Why an archive cannot be imported: the message names the first problem found. */
export class ArchiveProblem extends Error {}

/** A failure while an entry was read: the disk's errors are the service's, anything else the entry's. */
export function entryProblem (name: string, error: unknown): unknown {
  if (error instanceof ArchiveProblem) return error
  const code = (error as NodeJS.ErrnoException).code
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code) && code !== 'EPIPE') return error
  return new ArchiveProblem(`the entry ${name} is damaged (${(error as Error).message})`)
}

export interface ZipLimits {
  /** At most this many entries. */
  maxEntries: number
  /** The entries together unpack to at most this many times the archive's size. */
  maxRatio: number
  /** Whether an entry's name is one the archive may hold. */
  allowed: (name: string) => boolean
}

/** What an entry holds once read: its size and the SHA-256 of its bytes. */
export interface EntryDigest {
  size: number
  sha256: string
}

function openZip (file: string): Promise<ZipFile> {
  return new Promise((resolve, reject) => {
    yauzl.open(file, { lazyEntries: true, autoClose: false, strictFileNames: true, validateEntrySizes: true }, (error, zip) => {
      if (error !== null && error !== undefined) reject(new ArchiveProblem(`the file is not a complete ZIP archive (${error.message})`))
      else resolve(zip)
    })
  })
}

/** The entries of the central directory, read without their content. */
function listEntries (zip: ZipFile): Promise<Entry[]> {
  return new Promise((resolve, reject) => {
    const entries: Entry[] = []
    zip.on('entry', (entry: Entry) => {
      entries.push(entry)
      zip.readEntry()
    })
    zip.once('end', () => resolve(entries))
    zip.once('error', (error: Error) => {
      const unsafe = /relative path|absolute path|invalid characters/.test(error.message)
      reject(new ArchiveProblem(unsafe ? `an entry's name is not a safe path inside the archive (${error.message})` : `the archive's directory is damaged (${error.message})`))
    })
    zip.readEntry()
  })
}

/**
 * A ZIP archive on disk, read entry by entry: its directory is checked before
 * any content is read (entry count, names, sizes, encryption, compression),
 * and each entry streams from the file, never held whole in memory.
 */
export class ZipArchive {
  private constructor (private readonly zip: ZipFile, readonly entries: Map<string, Entry>) {}

  static async open (file: string, limits: ZipLimits): Promise<ZipArchive> {
    const { size } = await stat(file)
    const zip = await openZip(file)
    try {
      const count = Number(zip.entryCount)
      if (count > limits.maxEntries) throw new ArchiveProblem(`the archive has ${count} entries, more than ${limits.maxEntries}`)
      const entries = new Map<string, Entry>()
      let unpacked = 0
      for (const entry of await listEntries(zip)) {
        const name = entry.fileName
        if (name.endsWith('/')) continue
        if (!limits.allowed(name)) throw new ArchiveProblem(`the entry ${JSON.stringify(name.slice(0, 200))} is not one an export writes`)
        if (entries.has(name)) throw new ArchiveProblem(`the entry ${name} appears twice`)
        if (entry.isEncrypted()) throw new ArchiveProblem(`the entry ${name} is encrypted`)
        if (entry.compressionMethod !== 0 && entry.compressionMethod !== 8) throw new ArchiveProblem(`the entry ${name} uses an unknown compression method`)
        unpacked += entry.uncompressedSize
        if (unpacked > limits.maxRatio * size) {
          throw new ArchiveProblem(`the archive would unpack to more than ${limits.maxRatio} × its size of ${size} bytes`)
        }
        entries.set(name, entry)
      }
      return new ZipArchive(zip, entries)
    } catch (error) {
      zip.close()
      throw error
    }
  }

  private stream (name: string): Promise<Readable> {
    const entry = this.entries.get(name)
    if (entry === undefined) return Promise.reject(new ArchiveProblem(`the archive has no ${name}`))
    return new Promise((resolve, reject) => {
      this.zip.openReadStream(entry, (error, stream) => {
        if (error !== null && error !== undefined) reject(new ArchiveProblem(`the entry ${name} cannot be read (${error.message})`))
        else resolve(stream)
      })
    })
  }

  /** Reads an entry through into `sink`, answering its size and SHA-256; a damaged entry is a problem of the archive. */
  private async pipe (name: string, sink: NodeJS.WritableStream | null): Promise<EntryDigest> {
    const source = await this.stream(name)
    const digest = new Digest()
    try {
      if (sink === null) {
        digest.resume()
        await pipeline(source, digest)
      } else {
        await pipeline(source, digest, sink)
      }
    } catch (error) {
      throw entryProblem(name, error)
    }
    return { size: digest.size, sha256: digest.sha256() }
  }

  /**
   * An entry's bytes as a stream, for a reader that takes them as they come;
   * `digest` answers their size and SHA-256 once the stream has ended.
   */
  async read (name: string): Promise<{ stream: Readable, digest: () => EntryDigest }> {
    const digest = new Digest()
    nodePipeline(await this.stream(name), digest, () => {})
    return { stream: digest, digest: () => ({ size: digest.size, sha256: digest.sha256() }) }
  }

  /** An entry's size and SHA-256, its content read and dropped. */
  digest (name: string): Promise<EntryDigest> {
    return this.pipe(name, null)
  }

  /** Unpacks an entry into a new file. */
  extract (name: string, file: string): Promise<EntryDigest> {
    return this.pipe(name, createWriteStream(file, { flags: 'wx', mode: 0o640 }))
  }

  /** The size an entry declares it unpacks to (checked while it is read). */
  sizeOf (name: string): number {
    return this.entries.get(name)?.uncompressedSize ?? 0
  }

  close (): void {
    this.zip.close()
  }
}
