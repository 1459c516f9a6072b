import type { Test } from 'tap'
import { ConfigError, loadConfig } from '../io/config'

/** The settings production needs, and no more. */
export const PRODUCTION = { NODE_ENV: 'production', DATABASE_URL: 'postgres://app:pw@db:5432/app', JWT_SECRET: 'a'.repeat(32), JWT_REFRESH_SECRET: 'b'.repeat(32) }

/** Starting with `env` (or with `start`) is refused by a one-line ConfigError that names `setting`. */
export function refused (t: Test, env: Record<string, string>, setting: string, pattern: RegExp, start: () => unknown = () => loadConfig(env)): void {
  let error: unknown = null
  try {
    start()
  } catch (caught) {
    error = caught
  }
  t.ok(error instanceof ConfigError, `${setting}: refused with a ConfigError`)
  t.equal((error as ConfigError).setting, setting, `names ${setting}`)
  t.match((error as ConfigError).message, pattern)
  t.notMatch((error as ConfigError).message, /\n/, 'one line')
}
