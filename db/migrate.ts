import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import type { ReservedSql } from 'postgres'
import { changeKindsCheck } from './change-kinds'
import type { Sql } from './client'
import { LOCKS } from './locks'

export const MIGRATIONS_DIR = path.join(__dirname, '..', 'migrations')

/** The SQL functions as they are today, one file a function, applied after the migrations. */
export const FUNCTIONS_DIR = path.join(__dirname, '..', 'db', 'functions')

const FILE_NAME = /^\d{8}-\d{6}-[a-z0-9-]+\.sql$/

export class MigrationError extends Error {
  constructor (readonly file: string, cause: unknown) {
    super(`Migration ${file} failed: ${cause instanceof Error ? cause.message : String(cause)}`)
    this.name = 'MigrationError'
  }
}

interface Options {
  dir?: string
  /** The folder of today's functions; by default db/functions with the shipped migrations, none with another folder of them. */
  functions?: string | null
  log?: { info: (msg: string) => void }
}

export async function migrationFiles (dir = MIGRATIONS_DIR): Promise<string[]> {
  const names = (await readdir(dir)).filter(name => name.endsWith('.sql'))
  for (const name of names) {
    if (!FILE_NAME.test(name)) throw new MigrationError(name, new Error('the name must be YYYYMMDD-HHMMSS-description.sql'))
  }
  return names.sort()
}

/** The files of today's functions, by name. */
export async function functionFiles (dir = FUNCTIONS_DIR): Promise<string[]> {
  return (await readdir(dir)).filter(name => name.endsWith('.sql')).sort()
}

export async function appliedMigrations (sql: Sql): Promise<string[]> {
  const rows = await sql<{ name: string }[]>`select name from migrations order by name`
  return rows.map(row => row.name)
}

/** Runs `work` in a transaction of its own on the reserved connection; a failure names what failed. */
async function inTransaction (conn: ReservedSql, what: string, work: () => Promise<void>): Promise<void> {
  await conn.unsafe('begin')
  try {
    await work()
    await conn.unsafe('commit')
  } catch (error) {
    await conn.unsafe('rollback').catch(() => {})
    throw new MigrationError(what, error)
  }
}

/**
 * Applies every migration file not yet recorded, in name order, each in its own
 * transaction together with its record, then every function file, all in one
 * transaction: a database migrated from any earlier version ends with the
 * functions a new one has. A session advisory lock makes instances that start
 * together wait for each other, so each file runs once. Returns the names of
 * the migrations applied.
 */
export async function migrate (sql: Sql, { dir = MIGRATIONS_DIR, functions = dir === MIGRATIONS_DIR ? FUNCTIONS_DIR : null, log }: Options = {}): Promise<string[]> {
  const files = await migrationFiles(dir)
  const conn = await sql.reserve()
  try {
    await conn`select pg_advisory_lock(${LOCKS.migrations})`
    try {
      await conn`
        create table if not exists migrations (
          id serial primary key,
          name varchar(255) unique not null,
          applied_at timestamptz not null default now()
        )
      `
      const done = new Set((await conn<{ name: string }[]>`select name from migrations`).map(row => row.name))
      const applied: string[] = []
      for (const file of files) {
        if (done.has(file)) continue
        const text = await readFile(path.join(dir, file), 'utf8')
        await inTransaction(conn, file, async () => {
          await conn.unsafe(text).simple()
          await conn`insert into migrations ${conn({ name: file })}`
        })
        log?.info(`applied migration ${file}`)
        applied.push(file)
      }
      if (functions !== null) await applyFunctions(conn, functions)
      // The kinds the change log takes come from the registry, not from a migration.
      const check = await changeKindsCheck(conn)
      if (check !== null) {
        await inTransaction(conn, 'the change log\'s kinds', async () => { await conn.unsafe(check).simple() })
        log?.info('applied the change log\'s kinds')
      }
      return applied
    } finally {
      await conn`select pg_advisory_unlock(${LOCKS.migrations})`.catch(() => {})
    }
  } finally {
    conn.release()
  }
}

/** Applies every function file (each a `create or replace`) in one transaction; a failing one leaves them all as they were. */
async function applyFunctions (conn: Sql, dir: string): Promise<void> {
  const names = await functionFiles(dir)
  const texts = await Promise.all(names.map(async name => await readFile(path.join(dir, name), 'utf8')))
  await conn.unsafe('begin')
  let name = ''
  try {
    for (const [index, text] of texts.entries()) {
      name = names[index]
      await conn.unsafe(text).simple()
    }
    await conn.unsafe('commit')
  } catch (error) {
    await conn.unsafe('rollback').catch(() => {})
    throw new MigrationError(`functions/${name}`, error)
  }
}
