import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { startEmbeddedDatabase } from '../../db/embedded'
import { onCleanup } from './cleanup'

export interface BenchDatabase {
  url: string
  /** A temporary directory for the run's files, removed at the end. */
  dir: string
}

const quiet = { info: () => {}, debug: () => {}, warn: (msg: string) => process.stderr.write(`postgres: ${msg}\n`) }

/** An embedded PostgreSQL of the run's own, in a temporary directory removed at the end. */
export async function startDatabase (): Promise<BenchDatabase> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'child-health-bench-'))
  // As root, PostgreSQL runs as the postgres user, which must reach its data directory.
  chmodSync(dir, 0o755)
  onCleanup('removing the temporary directory', async () => rmSync(dir, { recursive: true, force: true }))
  const dataDir = path.join(dir, 'postgres')
  const db = await startEmbeddedDatabase(dataDir, quiet)
  // Ctrl-C in a terminal reaches PostgreSQL too; once it has shut down, its pid file is gone.
  onCleanup('stopping PostgreSQL', async () => {
    if (existsSync(path.join(dataDir, 'postmaster.pid'))) await db.stop()
  })
  return { url: db.url, dir }
}
