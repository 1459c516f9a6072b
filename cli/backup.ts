import path from 'node:path'
import { writeBackup } from '../db/backup/backup'
import { sealer } from '../db/backup/encryption'
import { megabytes, plural, stderrProgress } from '../db/backup/progress'
import { backupTarget, pruneBackups } from '../db/backup/target'
import { log, option, UsageError, withDatabase, type Command } from './command'
import { readPassphrase } from './input'

/** backup: a backup archive, into a file or a folder of them, encrypted or not. */
export const backup: Command = {
  options: { out: { type: 'string' }, keep: { type: 'string' }, encrypt: { type: 'boolean' } },
  async run (values, config) {
    const keep = values.keep === undefined ? null : Number(values.keep)
    if (keep !== null && !(Number.isInteger(keep) && keep >= 1)) throw new UsageError('--keep must be a whole number of 1 or more')
    const out = option(values, 'out')
    // The passphrase is checked before anything is written.
    const encryption = values.encrypt === true ? await sealer(await readPassphrase(true)) : undefined
    const target = await backupTarget(path.resolve(out), keep !== null || /[/\\]$/.test(out), new Date(), encryption === undefined ? '' : '.enc')
    if (target === null) throw new UsageError(`--out ${out} is a file: name a folder to keep backups in`)
    const { file, folder } = target
    const roots = { uploads: config.uploadDir, avatars: config.avatarDir }
    const manifest = await withDatabase(config, sql => writeBackup(sql, file, { roots, serviceVersion: config.version, progress: stderrProgress('backup'), encryption }))
    if (folder !== null && keep !== null) {
      for (const name of await pruneBackups(folder, keep)) log.info(`backup: removed the old backup ${name}`)
    }
    const rows = manifest.tables.reduce((sum, table) => sum + table.rows, 0)
    const bytes = manifest.files.reduce((sum, item) => sum + item.bytes, 0)
    return `backup written to ${file}${encryption === undefined ? '' : ', encrypted'}: ${plural(rows, 'row')} in ${plural(manifest.tables.length, 'table')}, ${plural(manifest.files.length, 'file')} (${megabytes(bytes)})`
  }
}
