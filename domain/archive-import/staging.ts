import path from 'node:path'
import { rename } from 'node:fs/promises'
import { temporaryName } from '../../lib/files/names'
import { removeQuietly } from '../../io/files/store'

/** A file the archive holds for a row, unpacked into a temporary file of its target folder until it is stored. */
export interface Unpacked {
  dir: string
  temporary: string
  stored: string
  size: number
  contentType: string
}

/**
 * What an import leaves on disk until its rows commit: temporary files, then
 * stored ones. Whatever is here when the import fails is removed; a process
 * killed meanwhile leaves files that the orphan sweep removes.
 */
export class Staging {
  readonly files: Unpacked[] = []
  private readonly temporaries = new Set<string>()
  private readonly renamed: string[] = []

  /** A new temporary file in `dir`, removed with the staging unless it is stored. */
  temporary (dir: string): string {
    const file = path.join(dir, temporaryName())
    this.temporaries.add(file)
    return file
  }

  add (file: Unpacked): void {
    this.temporaries.add(file.temporary)
    this.files.push(file)
  }

  async store (): Promise<void> {
    for (const file of this.files) {
      const target = path.join(file.dir, file.stored)
      await rename(file.temporary, target)
      this.temporaries.delete(file.temporary)
      this.renamed.push(target)
    }
  }

  async discard (): Promise<void> {
    await Promise.all([...this.temporaries, ...this.renamed].map(removeQuietly))
  }
}
