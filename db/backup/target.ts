import { mkdir, readdir, rm, stat } from 'node:fs/promises'
import path from 'node:path'

/** The names `backupTarget` gives in a folder: plain archives and encrypted ones. */
const SCHEDULED = /^child-health-(\d{8}-\d{6})\.tar(\.enc)?$/
/** What a run writes beside such an archive before renaming it into place. */
const TEMPORARY = /^child-health-\d{8}-\d{6}\.tar(\.enc)?\.(partial|spool)$/

function stamp (date: Date): string {
  return date.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)
}

/**
 * `--out` names the archive, or a folder that gets one archive per run named
 * after its time (UTC), with `suffix` (`.enc` for an encrypted one) appended:
 * an existing folder, or, when `asFolder` (the name ends with a slash, or old
 * archives are to be pruned), one made if missing. A name given for the file
 * is used as given. A file where a folder is meant answers null.
 */
export async function backupTarget (out: string, asFolder = false, now = new Date(), suffix = ''): Promise<{ file: string, folder: string | null } | null> {
  const found = await stat(out).catch(() => null)
  const inFolder = (folder: string) => ({ file: path.join(folder, `child-health-${stamp(now)}.tar${suffix}`), folder })
  if (found?.isDirectory() === true) return inFolder(out)
  if (!asFolder) return { file: out, folder: null }
  if (found !== null) return null
  await mkdir(out, { recursive: true, mode: 0o700 })
  return inFolder(out)
}

/**
 * Removes all but the newest `keep` archives that `backupTarget` named in a
 * folder, plain and encrypted counted together. Nothing else is touched: no
 * other name, nor anything that is not a regular file. Answers the names removed.
 */
export async function pruneBackups (folder: string, keep: number): Promise<string[]> {
  const found = (await readdir(folder, { withFileTypes: true }))
    .filter(item => item.isFile())
    .map(item => ({ name: item.name, time: SCHEDULED.exec(item.name)?.[1] }))
    .filter((item): item is { name: string, time: string } => item.time !== undefined)
  // Newest first, by the time in the name; for the same time, by name.
  found.sort((a, b) => a.time === b.time ? b.name.localeCompare(a.name) : b.time.localeCompare(a.time))
  const removed = found.slice(keep).map(item => item.name)
  for (const name of removed) await rm(path.join(folder, name), { force: true })
  return removed
}

/**
 * Removes the temporary files (`.partial`, `.spool`) that runs stopped by
 * SIGKILL or a crash left in a folder, those last written before `staleBefore`:
 * a running backup writes its own more recently than that. Answers the names removed.
 */
export async function sweepTemporary (folder: string, staleBefore: Date): Promise<string[]> {
  const removed: string[] = []
  const items = await readdir(folder, { withFileTypes: true }).catch(() => [])
  for (const item of items) {
    if (!item.isFile() || !TEMPORARY.test(item.name)) continue
    const found = await stat(path.join(folder, item.name)).catch(() => null)
    if (found === null || found.mtime >= staleBefore) continue
    await rm(path.join(folder, item.name), { force: true })
    removed.push(item.name)
  }
  return removed
}
