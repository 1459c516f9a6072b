import { rmSync } from 'node:fs'
import path from 'node:path'
import { temporaryFiles, writeBackup } from '../db/backup/backup'
import { sealer } from '../db/backup/encryption'
import { megabytes, plural, stderrProgress } from '../db/backup/progress'
import { backupTarget, pruneBackups, sweepTemporary } from '../db/backup/target'
import { log, option, UsageError, withDatabase, type Command } from './command'
import { readPassphrase } from './input'

const SIGNALS = { SIGINT: 2, SIGTERM: 15 } as const
/** How long a stopped backup waits before it removes its files and exits, in milliseconds. */
const SETTLE_MS = 200

/** Whether a signal has stopped the backup: it then never reports success. */
let stopping = false

/**
 * Until the returned function is called, SIGINT and SIGTERM remove `files`
 * and end the process with 128 + the signal's number, as a shell reports it.
 * They are removed SETTLE_MS after the signal, right before the exit: a file
 * the backup was opening as the signal came (a table's spool) is there by then.
 */
function removedOnSignal (files: string[]): () => void {
  const remove = (): void => { for (const file of files) rmSync(file, { force: true }) }
  const handlers = Object.entries(SIGNALS).map(([signal, number]) => {
    const handler = (): void => {
      stopping = true
      process.stderr.write(`backup: stopped by ${signal}; nothing was written\n`)
      setTimeout(() => {
        remove()
        process.exit(128 + number)
      }, SETTLE_MS)
    }
    process.once(signal, handler)
    return () => process.off(signal, handler)
  })
  return () => handlers.forEach(off => off())
}

/**
 * backup: a backup archive, into a file or a folder of them, encrypted or not.
 * Each step has BACKUP_STEP_TIMEOUT_MS, also as the connection's
 * statement_timeout, and the whole backup BACKUP_TIMEOUT_MS.
 */
export const backup: Command = {
  options: { out: { type: 'string' }, keep: { type: 'string' }, encrypt: { type: 'boolean' } },
  async run (values, config) {
    const started = new Date()
    const keep = values.keep === undefined ? null : Number(values.keep)
    if (keep !== null && !(Number.isInteger(keep) && keep >= 1)) throw new UsageError('--keep must be a whole number of 1 or more')
    const out = option(values, 'out')
    // The passphrase is checked before anything is written.
    const encryption = values.encrypt === true ? await sealer(await readPassphrase(true)) : undefined
    const target = await backupTarget(path.resolve(out), keep !== null || /[/\\]$/.test(out), started, encryption === undefined ? '' : '.enc')
    if (target === null) throw new UsageError(`--out ${out} is a file: name a folder to keep backups in`)
    const { file, folder } = target
    if (folder !== null && keep !== null) {
      // No running backup is older than its overall bound.
      const staleBefore = new Date(started.getTime() - config.backupTimeout)
      for (const name of await sweepTemporary(folder, staleBefore)) log.info(`backup: removed ${name}, left by a backup that did not finish`)
    }
    const roots = { uploads: config.uploadDir, avatars: config.avatarDir }
    const bounds = { stepMs: config.backupStepTimeout, totalMs: config.backupTimeout }
    const { partial, spool } = temporaryFiles(file)
    const stopHandling = removedOnSignal([partial, spool])
    let manifest
    try {
      manifest = await withDatabase(
        config,
        sql => writeBackup(sql, file, { roots, serviceVersion: config.version, progress: stderrProgress('backup'), encryption, bounds }),
        { connection: { statement_timeout: bounds.stepMs } }
      )
    } catch (error) {
      // A backup whose files a signal removed fails: the exit under way says why.
      if (!stopping) throw error
    } finally {
      stopHandling()
    }
    // Stopped by a signal, as it failed or as it ended: the exit under way says so.
    if (stopping || manifest === undefined) return await new Promise<never>(() => {})
    if (folder !== null && keep !== null) {
      for (const name of await pruneBackups(folder, keep)) log.info(`backup: removed the old backup ${name}`)
    }
    const rows = manifest.tables.reduce((sum, table) => sum + table.rows, 0)
    const bytes = manifest.files.reduce((sum, item) => sum + item.bytes, 0)
    return `backup written to ${file}${encryption === undefined ? '' : ', encrypted'}: ${plural(rows, 'row')} in ${plural(manifest.tables.length, 'table')}, ${plural(manifest.files.length, 'file')} (${megabytes(bytes)})`
  }
}
