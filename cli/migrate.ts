import { migrate as applyMigrations } from '../db/migrate'
import { log, withDatabase, type Command } from './command'

/** migrate: the pending schema migrations. */
export const migrate: Command = {
  options: {},
  run: (_values, config) => withDatabase(config, async sql => {
    const applied = await applyMigrations(sql, { log })
    return applied.length === 0 ? 'the database is up to date' : `applied ${applied.length} migration(s)`
  })
}
