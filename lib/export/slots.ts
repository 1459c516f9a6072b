/**
 * How many of a kind of work run at once: at most `perUser` for one user and
 * `total` in all (no bound in all when it is Infinity). A slot is given back
 * by the function `take` answers, once, however the work ends.
 */
export class ExportSlots {
  private running = 0
  private readonly byUser = new Map<number, number>()

  constructor (readonly total: number, readonly perUser = 2) {}

  /** A function that gives the slot back, or null when none is free. */
  take (userId: number): (() => void) | null {
    const mine = this.byUser.get(userId) ?? 0
    if (mine >= this.perUser || this.running >= this.total) return null
    this.running += 1
    this.byUser.set(userId, mine + 1)
    let given = false
    return () => {
      if (given) return
      given = true
      this.running -= 1
      const left = (this.byUser.get(userId) ?? 1) - 1
      if (left === 0) this.byUser.delete(userId)
      else this.byUser.set(userId, left)
    }
  }
}
