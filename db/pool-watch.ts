import type { Sql } from './client'

/** How long every connection of the pool may stay taken before the pool counts as saturated. */
export const SATURATED_AFTER_MS = 5000

/**
 * Counts the connections that transactions and reservations hold (those that
 * wait for one included), and says since when all of them have been taken.
 * Single queries hold a connection for one round trip only, which the answer
 * timeout bounds.
 */
export class PoolWatch {
  private held = 0
  private fullSince: number | null = null

  constructor (sql: Sql, readonly size: number) {
    const begin = sql.begin.bind(sql) as (...args: unknown[]) => Promise<unknown>
    const reserve = sql.reserve.bind(sql)
    Object.assign(sql, {
      begin: (...args: unknown[]) => {
        this.take()
        return begin(...args).finally(() => this.give())
      },
      reserve: async () => {
        this.take()
        try {
          const reserved = await reserve()
          const release = reserved.release.bind(reserved)
          let released = false
          reserved.release = () => {
            if (!released) this.give()
            released = true
            release()
          }
          return reserved
        } catch (error) {
          this.give()
          throw error
        }
      }
    })
  }

  private take (): void {
    this.held += 1
    if (this.held >= this.size && this.fullSince === null) this.fullSince = Date.now()
  }

  private give (): void {
    this.held -= 1
    if (this.held < this.size) this.fullSince = null
  }

  /** Connections held by transactions and reservations, and those waiting for one. */
  get inUse (): number {
    return this.held
  }

  /** True once no connection has been free for SATURATED_AFTER_MS. */
  get saturated (): boolean {
    return this.fullSince !== null && Date.now() - this.fullSince >= SATURATED_AFTER_MS
  }
}
