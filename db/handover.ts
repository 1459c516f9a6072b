import type { Sql, Tx } from './client'

/** Work to do once a transaction has committed: dropped when it rolls back. */
export type Effect = () => unknown

/**
 * A transaction handed to the code that runs in it: nothing finds it on its
 * own. It carries its queries (`sql`), the effects waiting for the outermost
 * commit, and the only family the requests run in it may touch (a batch's).
 */
export class Handed {
  /** The transaction as the code uses the pool: a query runs in it, and `begin` makes a savepoint of it. */
  readonly sql: Sql
  private effects: Effect[] = []
  private state: 'open' | 'committed' | 'rolled back' = 'open'

  constructor (readonly tx: Tx, readonly parent: Handed | null, readonly familyId: number | null, readonly pool: Sql) {
    this.sql = poolLike(pool, this)
  }

  /**
   * Runs `effect` once the outermost transaction has committed; never when
   * this one or one around it rolls back. Once this savepoint is released,
   * the one around it holds its effects.
   */
  async afterCommit (effect: Effect): Promise<void> {
    if (this.state === 'open') this.effects.push(effect)
    else if (this.state === 'committed') await (this.parent === null ? effect() : this.parent.afterCommit(effect))
  }

  /** Ends the transaction's bookkeeping: on commit its effects run, or go to the one around it. */
  async end (committed: boolean): Promise<void> {
    const effects = this.effects
    this.effects = []
    this.state = committed ? 'committed' : 'rolled back'
    if (committed) for (const effect of effects) await this.afterCommit(effect)
  }
}

/**
 * Runs `fn` in a transaction handed to it: one of its own on the pool, or a
 * savepoint of a handed one. On success its effects run after the outermost
 * commit; on failure it rolls back (to its savepoint) and they are dropped.
 */
export async function inTransaction<T> (within: Sql | Handed, fn: (handed: Handed) => Promise<T>, options: { familyId?: number } = {}): Promise<T> {
  const parent = within instanceof Handed ? within : null
  const pool = parent === null ? within as Sql : parent.pool
  let handed: Handed | null = null
  const run = async (tx: Tx): Promise<T> => {
    handed = new Handed(tx, parent, options.familyId ?? parent?.familyId ?? null, pool)
    return await fn(handed)
  }
  let result: T
  try {
    result = parent === null ? await pool.begin(run) as T : await parent.tx.savepoint(run) as T
  } catch (error) {
    await (handed as Handed | null)?.end(false)
    throw error
  }
  await (handed as unknown as Handed).end(true)
  return result
}

/** A handed transaction in the pool's shape: a query, a fragment, `unsafe` and `file` run in it, and `begin` makes a savepoint. */
function poolLike (pool: Sql, handed: Handed): Sql {
  const begin = async (...args: unknown[]): Promise<unknown> => {
    const fn = args[args.length - 1] as (tx: Tx) => Promise<unknown>
    return await inTransaction(handed, async inner => await fn(inner.tx))
  }
  const tx = handed.tx
  return new Proxy(pool, {
    apply (_target, thisArg, args) {
      return Reflect.apply(tx as unknown as (...a: unknown[]) => unknown, thisArg, args)
    },
    get (target, property, receiver) {
      if (property === 'begin') return begin
      if (property === 'unsafe' || property === 'file' || property === 'savepoint') return tx[property]
      return Reflect.get(target, property, receiver)
    }
  })
}
