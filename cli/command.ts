import type { Config } from '../io/config'
import { stderrPriority } from '../io/log-destination'
import type { Sql } from '../db/client'
import { openDatabase } from '../db/backup/database'

/** A mistake in how the command line was called: exit code 2. */
export class UsageError extends Error {}

export type Values = Record<string, string | boolean | undefined>

/** A command: its options, and what it does with them, answering the line it prints. */
export interface Command {
  options: Record<string, { type: 'string' | 'boolean' }>
  run: (values: Values, config: Config) => Promise<string>
}

// Under systemd (the backup timer), warnings and failures reach the journal at their own priority.
export const log = {
  info: (msg: string) => process.stderr.write(`${msg}\n`),
  debug: () => {},
  warn: (msg: string) => process.stderr.write(`${stderrPriority(4)}${msg}\n`)
}

/** A required option's value, trimmed. */
export function option (values: Values, name: string): string {
  const value = values[name]
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${name} is required`)
  return value.trim()
}

export async function withDatabase<T> (config: Config, work: (sql: Sql) => Promise<T>, options: Parameters<typeof openDatabase>[2] = {}): Promise<T> {
  const database = await openDatabase(config, log, options)
  try {
    return await work(database.sql)
  } finally {
    await database.close()
  }
}
