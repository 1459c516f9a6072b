import { rename, unlink } from 'node:fs/promises'
import path from 'node:path'

/** Removes a file if it is there; a file already gone is fine. */
export async function removeQuietly (file: string): Promise<void> {
  try {
    await unlink(file)
  } catch {}
}

/**
 * Moves a received file to its stored name, then runs `commit`, the transaction
 * that records it: the file is in place before the row commits, and goes again
 * if the transaction fails.
 */
export async function storeFile<T> (temporary: string, dir: string, name: string, commit: () => Promise<T>): Promise<T> {
  const target = path.join(dir, name)
  await rename(temporary, target)
  try {
    return await commit()
  } catch (error) {
    await removeQuietly(target)
    throw error
  }
}
