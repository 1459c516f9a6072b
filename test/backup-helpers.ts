import path from 'node:path'
import type { Test } from 'tap'
import type { Sql } from '../db/client'
import { TEST_ENV, tempDir, testDatabase, type TestDatabase } from './helper'
import { cli } from './processes'

/** A database, a data folder with its upload and avatar folders, and the settings that point the command line at them. */
export interface Instance {
  db: TestDatabase
  env: Record<string, string>
  dir: string
  uploads: string
  avatars: string
}

/** An instance of the test's own; `empty` gives it a database without rows, migrated by the command line unless `migrated` is false. */
export async function instance (t: Test, { empty = false, migrated = true } = {}): Promise<Instance> {
  const db = await testDatabase(t, { empty })
  const dir = tempDir(t, 'child-health-backup-')
  const uploads = path.join(dir, 'uploads')
  const avatars = path.join(dir, 'avatars')
  const env = { ...TEST_ENV, DATABASE_URL: db.url, DATA_DIR: dir, UPLOAD_DIR: uploads, AVATAR_DIR: avatars }
  if (empty && migrated) {
    const run = await cli(['migrate'], env)
    if (run.code !== 0) throw new Error(`migrate failed: ${run.stderr}`)
  }
  return { db, env, dir, uploads, avatars }
}

/** Every row of every table, as JSON text, in a stable order. */
export async function rows (sql: Sql): Promise<Record<string, string[]>> {
  const tables = await sql<Array<{ name: string }>>`select tablename::text as name from pg_tables where schemaname = current_schema() order by 1`
  const all: Record<string, string[]> = {}
  for (const { name } of tables) {
    const query = name === 'migrations' ? 'select name as row from migrations order by 1' : `select to_jsonb(x)::text as row from "${name}" x order by 1`
    all[name] = (await sql.unsafe(query)).map(row => row.row)
  }
  return all
}

/** The tables whose rows carry a version and are written to the change log. */
export const TRACKED = ['families', 'family_members', 'children', 'visits', 'measurements', 'medical_events', 'illnesses', 'attachments', 'temperatures']

/**
 * What a restore brings back as it was: every row but the versions, which
 * move on by one, and the change log, its counts and clocks, which it extends.
 */
export function kept (all: Record<string, string[]>): Record<string, string[]> {
  const out: Record<string, string[]> = {}
  for (const [table, list] of Object.entries(all)) {
    if (table === 'family_clocks' || table === 'changes' || table === 'tallies') continue
    out[table] = TRACKED.includes(table)
      ? list.map(row => { const { version: _version, ...rest } = JSON.parse(row); return JSON.stringify(rest) }).sort()
      : list
  }
  return out
}
