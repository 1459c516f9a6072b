import { writeFileSync } from 'node:fs'
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
  writeFileSync(readyFile, JSON.stringify({ url: db.url }))
}

main().catch(error => {
  console.error(error)
  process.exit(1)
})
