import { unlink } from 'node:fs/promises'
import path from 'node:path'
import type { FastifyBaseLogger } from 'fastify'
import type { Config } from './config'

/** Stored names of files to remove: attachments live in UPLOAD_DIR, avatars in AVATAR_DIR. */
export interface StoredNames {
  attachments?: string[]
  avatars?: string[]
}

/** A stored name is a plain file name: no directory part, nothing that climbs out. */
export function isPlainFileName (name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && !/[/\\\0]/.test(name) && path.basename(name) === name
}

async function removeOne (dir: string, name: string): Promise<boolean> {
  if (!isPlainFileName(name)) return false
  try {
    await unlink(path.join(dir, name))
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return false
  }
  return true
}

/**
 * Removes stored files, once the rows that named them are gone. A file that is
 * already gone counts as removed. Answers the names that were refused or could
 * not be removed, for the caller to log; it never throws, since the data they
 * belonged to is deleted by then.
 */
export async function removeStoredFiles (config: Pick<Config, 'uploadDir' | 'avatarDir'>, names: StoredNames): Promise<string[]> {
  const jobs = [
    ...(names.attachments ?? []).map(name => ({ dir: config.uploadDir, name })),
    ...(names.avatars ?? []).map(name => ({ dir: config.avatarDir, name }))
  ]
  const results = await Promise.all(jobs.map(async job => ({ name: job.name, removed: await removeOne(job.dir, job.name) })))
  return results.filter(result => !result.removed).map(result => result.name)
}

/**
 * Removes stored files once the transaction that deleted their rows has
 * committed, and warns with how many were left behind, naming none.
 */
export async function removeAfterCommit (
  config: Pick<Config, 'uploadDir' | 'avatarDir'>, log: Pick<FastifyBaseLogger, 'warn'>, names: StoredNames, message: string
): Promise<void> {
  const left = await removeStoredFiles(config, names)
  if (left.length > 0) log.warn({ files: left.length }, message)
}
