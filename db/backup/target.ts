import { readdir, rm, stat } from 'node:fs/promises'
import path from 'node:path'

const SCHEDULED = /^child-health-\d{8}-\d{6}\.tar$/

function stamp (date: Date): string {
  return date.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)
}

/** `--out` names the archive, or a folder that gets one archive per run named after its time (UTC). */
export async function backupTarget (out: string, now = new Date()): Promise<{ file: string, folder: string | null }> {
  const found = await stat(out).catch(() => null)
  if (found?.isDirectory() === true) return { file: path.join(out, `child-health-${stamp(now)}.tar`), folder: out }
  return { file: out, folder: null }
}

/** Removes all but the newest `keep` archives that `backupTarget` named in a folder. Answers the names removed. */
export async function pruneBackups (folder: string, keep: number): Promise<string[]> {
  const names = (await readdir(folder)).filter(name => SCHEDULED.test(name)).sort().reverse()
  const removed = names.slice(keep)
  for (const name of removed) await rm(path.join(folder, name), { force: true })
  return removed
}
