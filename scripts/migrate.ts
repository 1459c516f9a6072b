import { ConfigError, loadConfig } from '../plugins/config'
import { createSql } from '../plugins/db'
import { startEmbeddedDatabase } from '../lib/embedded-db'
import { migrate } from '../sql/migrations'

/** Applies pending migrations to the configured database without serving. */
async function main (): Promise<void> {
  const config = loadConfig()
  const log = { info: (msg: string) => console.log(msg), debug: () => {}, warn: (msg: string) => console.warn(msg) }
  const embedded = config.database.kind === 'embedded' ? await startEmbeddedDatabase(config.database.dir, log) : null
  const sql = createSql(embedded?.url ?? (config.database as { url: string }).url)
  try {
    const applied = await migrate(sql, { log })
    console.log(applied.length === 0 ? 'the database is up to date' : `applied ${applied.length} migration(s)`)
  } finally {
    await sql.end({ timeout: 5 })
    await embedded?.stop()
  }
}

main().catch(error => {
  process.stderr.write(`${error instanceof ConfigError || error instanceof Error ? error.message.split('\n')[0] : String(error)}\n`)
  process.exit(1)
})
