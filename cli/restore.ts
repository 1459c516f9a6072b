import path from 'node:path'
import { plainArchive, type ArchiveSource } from '../db/backup/archive'
import { isEncrypted, openEncrypted } from '../db/backup/encryption'
import { plural, stderrProgress } from '../db/backup/progress'
import { restoreBackup } from '../db/backup/restore'
import { option, withDatabase, type Command } from './command'
import { readPassphrase } from './input'

/** The backup file to restore; an encrypted one is opened with its passphrase. */
async function openBackup (file: string): Promise<ArchiveSource> {
  try {
    if (!await isEncrypted(file)) return await plainArchive(file)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`there is no file ${file}`)
    throw error
  }
  return openEncrypted(file, await readPassphrase(false))
}

/** restore: a backup, into an empty instance or in place of everything in it. */
export const restore: Command = {
  options: { in: { type: 'string' }, replace: { type: 'boolean' } },
  async run (values, config) {
    // The passphrase is checked before the database is opened.
    const archive = await openBackup(path.resolve(option(values, 'in')))
    const roots = { uploads: config.uploadDir, avatars: config.avatarDir }
    const manifest = await withDatabase(config, sql => restoreBackup(sql, archive, { roots, replace: values.replace === true, progress: stderrProgress('restore') }))
    const rows = manifest.tables.reduce((sum, table) => sum + table.rows, 0)
    return `restored the backup of ${manifest.createdAt}: ${plural(rows, 'row')}, ${plural(manifest.files.length, 'file')}`
  }
}
