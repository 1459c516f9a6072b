import { renameSync, writeFileSync } from 'node:fs'
import { startEmbeddedDatabase } from '../../db/embedded'

/**
 * Runs the test run's embedded PostgreSQL until SIGTERM. Started detached by
 * before.ts, because tap's `before` step must end before the tests begin.
 */
async function main (): Promise<void> {
  const [dir, readyFile] = process.argv.slice(2)
  const quiet = { info: () => {}, debug: () => {}, warn: (msg: string) => console.error(msg) }
  const db = await startEmbeddedDatabase(dir, quiet, ['fsync=off', 'synchronous_commit=off', 'full_page_writes=off', 'max_connections=300'])
  const stop = (): void => { db.stop().finally(() => process.exit(0)) }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
  // Written whole, then renamed: before.ts never reads half of it.
  writeFileSync(`${readyFile}.partial`, JSON.stringify({ url: db.url }))
  renameSync(`${readyFile}.partial`, readyFile)
}

main().catch(error => {
  console.error(error)
  process.exit(1)
})
