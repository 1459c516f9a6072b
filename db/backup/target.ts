import { mkdir, readdir, rm, stat } from 'node:fs/promises'
import path from 'node:path'

const SCHEDULED = /^child-health-\d{8}-\d{6}\.tar$/

function stamp (date: Date): string {
  return date.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)
}

/**
 * `--out` names the archive, or a folder that gets one archive per run named
 * after its time (UTC): an existing folder, or, when `asFolder` (the name ends
 * with a slash, or old archives are to be pruned), one made if missing. A
 * file where a folder is meant answers null.
 */
export async function backupTarget (out: string, asFolder = false, now = new Date()): Promise<{ file: string, folder: string | null } | null> {
  const found = await stat(out).catch(() => null)
  const inFolder = (folder: string) => ({ file: path.join(folder, `child-health-${stamp(now)}.tar`), folder })
  if (found?.isDirectory() === true) return inFolder(out)
  if (!asFolder) return { file: out, folder: null }
  if (found !== null) return null
  await mkdir(out, { recursive: true, mode: 0o700 })
  return inFolder(out)
}

/** Removes all but the newest `keep` archives that `backupTarget` named in a folder. Answers the names removed. */
export async function pruneBackups (folder: string, keep: number): Promise<string[]> {
  const names = (await readdir(folder)).filter(name => SCHEDULED.test(name)).sort().reverse()
  const removed = names.slice(keep)
  for (const name of removed) await rm(path.join(folder, name), { force: true })
  return removed
}
