import { readFileSync } from 'node:fs'
import path from 'node:path'

/**
 * Where the test run keeps the address of its database server and template.
 * tap starts the before and after steps and every test file itself, so its
 * process id tells runs apart when several run at once.
 */
export const STATE_FILE = path.join(__dirname, '..', '..', '.tap', `test-db-${process.ppid}.json`)

export interface TestDbState {
  /** A URL of the server's maintenance database (`postgres`). */
  adminUrl: string
  /** The migrated database that each test file's database is cloned from. */
  template: string
  /** The process that runs the embedded server, when there is one. */
  daemonPid: number | null
  /** The embedded server's own directory, removed at the end. */
  dir: string | null
  /** The folder holding WHO's growth tables for this run. */
  growthDir: string
}

/** The same server with another database name. */
export function withDatabase (url: string, name: string): string {
  const target = new URL(url)
  target.pathname = '/' + name
  return target.toString()
}

/** The run's state, written by before.ts. */
export function testState (): TestDbState {
  try {
    return JSON.parse(readFileSync(STATE_FILE, 'utf8'))
  } catch {
    throw new Error('no test database: run the tests with `npm test` (tap starts the database first)')
  }
}
