import './postgres-install'
import postgres from 'postgres'
import { answeringSocket } from './answers'

export type Sql = postgres.Sql<{}>
export type Tx = postgres.TransactionSql<{}>
/** What the query functions of sql/ run on: the pool or a transaction. */
export type Db = Sql | Tx

const DATE = 1082
const INT8 = 20
const NUMERIC = 1700

/**
 * Opens a pool with the project's type mapping: `date` stays the `YYYY-MM-DD`
 * text PostgreSQL sends (no time zone can shift it), `numeric` and `int8`
 * become JSON numbers.
 */
export function createSql (url: string, options: postgres.Options<{}> = {}): Sql {
  return postgres(url, {
    max: 10,
    connect_timeout: 5,
    // While the database is down, requests fail at once with a 503 instead of
    // waiting through growing reconnection delays.
    backoff: (retries: number) => Math.min(0.1 * retries, 0.5),
    idle_timeout: 60,
    onnotice: () => {},
    ...options,
    types: {
      date: { to: DATE, from: [DATE], serialize: (x: string) => x, parse: (x: string) => x },
      numeric: { to: NUMERIC, from: [NUMERIC], serialize: (x: number) => String(x), parse: (x: string) => Number(x) },
      int8: { to: INT8, from: [INT8], serialize: (x: number) => String(x), parse: (x: string) => Number(x) }
    }
  }) as unknown as Sql
}

/** How long a request waits for its database to answer before it is a 503. */
export const ANSWER_TIMEOUT_MS = 5000
/** Connections of a request pool. */
export const POOL_SIZE = 10
/**
 * Connections of the lookup pool: the one short read every request makes
 * first (its session and target). Few, so that when many requests come at
 * once their lookups share connections and round trips (postgres.js sends a
 * busy connection's queries together): under 32 concurrent cached list
 * reads, about a fifth more requests a second than on the ten of the
 * request pool.
 */
export const LOOKUP_POOL_SIZE = 2

/**
 * The pool a request runs on: every statement limited by `statement_timeout`,
 * and, on a plain connection, a query unanswered for ANSWER_TIMEOUT_MS fails
 * (the socket cannot be watched under TLS, where the server's own timeouts
 * and TCP keep-alive remain).
 */
export function createRequestSql (url: string, statementTimeout: number, max = POOL_SIZE): Sql {
  const sslmode = new URL(url).searchParams.get('sslmode')
  const plain = sslmode === null || sslmode === 'disable'
  return createSql(url, {
    max,
    connection: { statement_timeout: statementTimeout },
    ...(plain ? { socket: answeringSocket(ANSWER_TIMEOUT_MS) } : {})
  })
}

/** Cuts any later statement of the transaction that runs longer than `ms` (57014), until the transaction (or its savepoint) ends. */
export async function limitStatements (db: Db, ms: number): Promise<void> {
  await db`select set_config('statement_timeout', ${String(ms)}, true)`
}
