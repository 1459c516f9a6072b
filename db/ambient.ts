import { AsyncLocalStorage } from 'node:async_hooks'
import type { Sql, Tx } from './client'

/** Work to do once a transaction has committed: dropped when it rolls back. */
export type Effect = () => unknown

/**
 * A transaction that the request's code runs in without being handed it: the
 * app's `sql` answers through it while it is open (see `ambientSql`).
 */
interface Ambient {
  tx: Tx
  /** Effects waiting for the outermost transaction's commit. */
  effects: Effect[]
  open: boolean
  /** The transaction this one is a savepoint of. */
  parent: Ambient | null
  /** The only family whose data the requests run in it may touch (a batch's). */
  familyId: number | null
}

const storage = new AsyncLocalStorage<Ambient>()

/**
 * Ambient transactions open now. While one is, Node's async hooks carry the
 * store along every promise and socket of the process, every request's too:
 * on Node 20 a loop of promises takes about 2.5 times the CPU with them on,
 * and a read of the service up to 1.7 times. They are switched off again once
 * the last one ends: nothing then could read an open transaction from the
 * store anyway. Node 24 carries the store in async context frames instead,
 * at no such cost: there work scheduled inside keeps the closed store, which
 * `current()` passes over.
 */
let running = 0

/** The innermost open transaction of the running code, if any. */
function current (): Ambient | null {
  let ambient = storage.getStore() ?? null
  while (ambient !== null && !ambient.open) ambient = ambient.parent
  return ambient
}

/**
 * Whether Node carries an ambient store into the running code, open or not:
 * never once every ambient transaction has ended (see `running`).
 */
export function storeCarried (): boolean {
  return storage.getStore() !== undefined
}

/** Whether the running code is inside an ambient transaction. */
export function inAmbientTransaction (): boolean {
  return current() !== null
}

/** The family an ambient transaction is limited to (a batch's), or null. */
export function ambientFamily (): number | null {
  return current()?.familyId ?? null
}

/**
 * Runs `effect` once the work now running has committed: at once outside a
 * transaction, otherwise after the outermost transaction's commit, and never
 * when it rolls back.
 */
export async function afterCommit (effect: Effect): Promise<void> {
  const ambient = current()
  if (ambient === null) await effect()
  else ambient.effects.push(effect)
}

async function runEffects (effects: Effect[]): Promise<void> {
  for (const effect of effects) await effect()
}

/**
 * Runs `fn` in a transaction that the app's `sql` answers through: a
 * transaction of its own, or a savepoint of the ambient one. On success its
 * effects run after the outermost commit; on failure it rolls back (to its
 * savepoint) and its effects are dropped.
 */
export async function inTransaction<T> (pool: Sql, fn: (tx: Tx) => Promise<T>, options: { familyId?: number } = {}): Promise<T> {
  const parent = current()
  const effects: Effect[] = []
  let ambient: Ambient | null = null
  const run = async (tx: Tx): Promise<T> => {
    ambient = { tx, effects, open: true, parent, familyId: options.familyId ?? parent?.familyId ?? null }
    running++
    try {
      return await storage.run(ambient, async () => await fn(tx))
    } finally {
      ambient.open = false
      if (--running === 0) storage.disable()
    }
  }
  if (parent !== null) {
    const result = await parent.tx.savepoint(run) as T
    parent.effects.push(...effects)
    return result
  }
  const result = await pool.begin(run) as T
  await runEffects(effects)
  return result
}

/**
 * The pool as the app uses it: a query, a fragment or `begin` goes to the
 * ambient transaction while one is open (`begin` then makes a savepoint),
 * and to the pool otherwise.
 */
export function ambientSql (pool: Sql): Sql {
  const begin = async (...args: unknown[]): Promise<unknown> => {
    const fn = args[args.length - 1] as (tx: Tx) => Promise<unknown>
    if (current() === null) return await (pool.begin as (...a: unknown[]) => Promise<unknown>)(...args)
    return await inTransaction(pool, fn)
  }
  return new Proxy(pool, {
    apply (_target, thisArg, args) {
      const target = current()?.tx ?? pool
      return Reflect.apply(target as unknown as (...a: unknown[]) => unknown, thisArg, args)
    },
    get (target, property, receiver) {
      if (property === 'begin') return begin
      const ambient = current()
      if (ambient !== null && (property === 'unsafe' || property === 'file')) return ambient.tx[property]
      return Reflect.get(target, property, receiver)
    }
  })
}
