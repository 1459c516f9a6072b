import type { Sql, Tx } from '../../plugins/db'
import { SNAPSHOT } from '../../sql/export'

export interface Started<T> {
  /** What `prepare` read. */
  head: T
  /** Settles once the body is written and the transaction has ended. */
  done: Promise<void>
}

/**
 * Runs an export in one read-only REPEATABLE READ transaction that stays open
 * while its body is written, so that every row comes from the same moment.
 * `prepare` reads what the status and headers depend on: when it fails, the
 * promise fails and an ordinary error answers. Once it succeeds the promise
 * resolves, and `write` produces the body within the same snapshot.
 */
export function inSnapshot<T> (sql: Sql, prepare: (tx: Tx) => Promise<T>, write: (tx: Tx, head: T) => Promise<void>): Promise<Started<T>> {
  return new Promise((resolve, reject) => {
    let started = false
    const done: Promise<void> = sql.begin(SNAPSHOT, async tx => {
      const head = await prepare(tx)
      started = true
      resolve({ head, done })
      await write(tx, head)
    }).then(() => undefined)
    done.catch(error => {
      if (!started) reject(error)
    })
  })
}
