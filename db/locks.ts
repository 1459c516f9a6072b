import type postgres from 'postgres'
import { settledWithin } from '../lib/waiting'
import type { Db, Sql } from './client'

/**
 * The advisory lock keys of the service, one place for all: any constant
 * works, as long as every instance uses the same one for the same thing.
 */
export const LOCKS = {
  /** Migrations apply once, whatever the number of instances starting. */
  migrations: 7_405_117_301,
  /** The first user registered is the only admin made by registration. */
  registration: 7_405_117_302,
  /** The last admin cannot be demoted, disabled or deleted. */
  admins: 7_405_117_303,
  /** One instance at a time sweeps the files left without their rows. */
  orphanSweep: 7_405_117_304,
  /** One instance at a time downloads the growth tables. */
  growthDownload: 7_405_117_305,
  /** The job queue's schema is installed or upgraded by one instance at a time. */
  jobQueue: 7_405_117_306
} as const

/** Takes a transaction's advisory lock: it waits for the holder and is released at commit. */
export async function lockForTransaction (db: Db, key: number): Promise<void> {
  await db`select pg_advisory_xact_lock(${key})`
}

/** How long a lock's holder waits for a connection of its own. */
export const RESERVE_TIMEOUT_MS = 5000

/**
 * A connection of the pool's own, or an error once `ms` have passed. A
 * reservation can wait for good when the database goes away while it is
 * queued; one that comes after the error goes back to the pool at once.
 */
export async function reserveWithin (sql: Sql, ms: number): Promise<postgres.ReservedSql<{}>> {
  const reserving = sql.reserve()
  if (await settledWithin(reserving, ms)) return await reserving
  reserving.then(conn => conn.release(), () => {})
  throw new Error(`no database connection came within ${ms} ms`)
}

/**
 * Runs `work` while holding an advisory lock on a connection of its own,
 * released after it. With `wait: false`, answers `skipped` at once when
 * another instance holds it. Fails when no connection comes within
 * `reserveMs`.
 */
export async function whileLocked<T> (
  sql: Sql, key: number, work: () => Promise<T>, { wait = true, reserveMs = RESERVE_TIMEOUT_MS } = {}
): Promise<{ ran: true, result: T } | { ran: false }> {
  const conn = await reserveWithin(sql, reserveMs)
  try {
    if (wait) {
      await conn`select pg_advisory_lock(${key})`
    } else {
      const [{ locked }] = await conn<{ locked: boolean }[]>`select pg_try_advisory_lock(${key}) as locked`
      if (!locked) return { ran: false }
    }
    try {
      return { ran: true, result: await work() }
    } finally {
      await conn`select pg_advisory_unlock(${key})`.catch(() => {})
    }
  } finally {
    conn.release()
  }
}
