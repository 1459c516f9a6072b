/**
 * The queue postgres.js keeps its connections and its queries in, in place of
 * its own (postgres/cjs/src/queue.js): the same four operations, in the same
 * order of items.
 *
 * Its own queue shortens only once it is empty: each item shifted leaves an
 * empty slot at the front, and `remove` looks for an item from the first
 * slot. Under a steady load the pool's queue of busy connections is never
 * empty, since each query takes the next busy connection and puts it back at
 * the end: the queue grew by a slot a query, and each query's `remove` read
 * every slot since the load began. With 32 clients on two connections a
 * query's CPU time rose from 39 to 132 µs in twelve seconds.
 *
 * This one looks from its head and drops the slots before it once they are
 * half its array, so an operation costs the same at any time of a load.
 */
export interface PostgresQueue<T> {
  readonly length: number
  /** Slots in its array, the items and those before its head; for the tests. */
  readonly slots: number
  remove: (item: T) => T | null
  push: (item: T) => T
  shift: () => T | undefined
}

/** Slots before the head kept at most, unless they are fewer than the items. */
const KEPT_SLOTS = 64

export function Queue<T> (initial: T[] = []): PostgresQueue<T> {
  let items = initial.slice()
  let head = 0
  return {
    get length () {
      return items.length - head
    },
    get slots () {
      return items.length
    },
    remove (item: T): T | null {
      const at = items.indexOf(item, head)
      if (at === -1) return null
      items.splice(at, 1)
      return item
    },
    push (item: T): T {
      items.push(item)
      return item
    },
    shift (): T | undefined {
      if (head === items.length) return undefined
      const item = items[head]
      head++
      if (head === items.length) {
        items = []
        head = 0
      } else if (head > KEPT_SLOTS && head * 2 > items.length) {
        items = items.slice(head)
        head = 0
      } else {
        items[head - 1] = undefined as T
      }
      return item
    }
  }
}
