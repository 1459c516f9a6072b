import { readdir, stat } from 'node:fs/promises'
import path from 'node:path'
import { TEMPORARY_NAME } from '../../lib/files/names'
import { removeQuietly } from './store'

/**
 * Files left by a process that stopped between writing a file and committing
 * its row are removed once they are older than this, so that an upload still
 * in flight, here or on another instance, is never touched.
 */
export const ORPHAN_AGE_MS = 60 * 60 * 1000

/** Stored files and temporary files of a directory that are older than the orphan age. */
async function oldFiles (dir: string, now: number): Promise<{ stored: string[], temporary: string[] }> {
  const stored: string[] = []
  const temporary: string[] = []
  for (const name of await readdir(dir)) {
    const info = await stat(path.join(dir, name)).catch(() => undefined)
    if (info === undefined || !info.isFile() || now - info.mtimeMs <= ORPHAN_AGE_MS) continue
    if (TEMPORARY_NAME.test(name)) temporary.push(name)
    else if (!name.startsWith('.')) stored.push(name)
  }
  return { stored, temporary }
}

/**
 * Removes the old temporary files of a directory, and its old stored files
 * that no row names. `known` answers which of the given names have a row.
 * Answers the names removed.
 */
export async function sweepOrphans (dir: string, known: (names: string[]) => Promise<Set<string>>, now = Date.now()): Promise<string[]> {
  const { stored, temporary } = await oldFiles(dir, now)
  const rows = stored.length === 0 ? new Set<string>() : await known(stored)
  const orphans = [...temporary, ...stored.filter(name => !rows.has(name))]
  await Promise.all(orphans.map(name => removeQuietly(path.join(dir, name))))
  return orphans
}
