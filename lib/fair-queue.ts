/** A key already has as many jobs waiting or running as it may. */
export class QueueFull extends Error {
  constructor (readonly key: string) {
    super('too many jobs of one client are already waiting')
    this.name = 'QueueFull'
  }
}

interface Task {
  run: () => Promise<unknown>
  resolve: (value: any) => void
  reject: (error: unknown) => void
  /** The turn the job takes: the turn being served when it came, or the one after its key's previous job, whichever is later. */
  turn: number
  /** When it came, among jobs of the same turn. */
  arrival: number
}

/**
 * Work of many clients on a small pool (password hashing, image decoding).
 * At most `concurrency` jobs run at once. Each key (a user, an address) has a
 * queue of its own, and the keys are served in turns, one job each: every job
 * is given a turn, the turn being served when it came, unless its key already
 * has a job in that turn or a later one, and then the next of those; the
 * waiting job of the earliest turn runs first. A key that floods the pool
 * therefore waits behind its own jobs, and a key that comes while another's
 * jobs wait goes ahead of them: it waits for the jobs running, at most one a
 * slot, and no more. A key may hold at most `perKey` jobs waiting or running;
 * one more is refused at once with QueueFull. A key runs at most
 * `runningPerKey` jobs at once (all the slots unless told): with fewer than
 * the slots, a key that comes while another floods finds a slot that the
 * flood cannot hold, and waits for none of its jobs.
 */
export class FairQueue {
  private running = 0
  private served = 0
  private arrivals = 0
  private readonly waiting = new Map<string, Task[]>()
  private readonly held = new Map<string, number>()
  /** Jobs of each key running now. */
  private readonly active = new Map<string, number>()
  /** The turn after the last job given to each key that holds one. */
  private readonly nextTurn = new Map<string, number>()

  constructor (readonly concurrency: number, readonly perKey: number, readonly runningPerKey = concurrency) {
    if (concurrency < 1 || perKey < 1 || runningPerKey < 1) throw new RangeError('a queue needs at least one slot and one job per key')
  }

  /** Jobs of this key waiting or running. */
  pending (key: string): number {
    return this.held.get(key) ?? 0
  }

  run<T> (key: string, job: () => Promise<T>): Promise<T> {
    const held = this.pending(key)
    if (held >= this.perKey) return Promise.reject(new QueueFull(key))
    this.held.set(key, held + 1)
    const turn = Math.max(this.served, this.nextTurn.get(key) ?? 0)
    this.nextTurn.set(key, turn + 1)
    return new Promise<T>((resolve, reject) => {
      const task: Task = { run: job, resolve, reject, turn, arrival: this.arrivals++ }
      const queue = this.waiting.get(key)
      if (queue === undefined) this.waiting.set(key, [task])
      else queue.push(task)
      this.next()
    })
  }

  /** Starts jobs while slots are free, each time the first job of the earliest turn among the keys that may run one more. */
  private next (): void {
    while (this.running < this.concurrency && this.waiting.size > 0) {
      let key = ''
      let first: Task | null = null
      for (const [candidate, queue] of this.waiting) {
        if ((this.active.get(candidate) ?? 0) >= this.runningPerKey) continue
        const task = queue[0]
        if (first === null || task.turn < first.turn || (task.turn === first.turn && task.arrival < first.arrival)) {
          key = candidate
          first = task
        }
      }
      if (first === null) return
      const queue = this.waiting.get(key) as Task[]
      const task = queue.shift() as Task
      if (queue.length === 0) this.waiting.delete(key)
      this.served = Math.max(this.served, task.turn)
      this.running += 1
      this.active.set(key, (this.active.get(key) ?? 0) + 1)
      this.start(key, task)
    }
  }

  private start (key: string, task: Task): void {
    let outcome: Promise<unknown>
    try {
      outcome = task.run()
    } catch (error) {
      outcome = Promise.reject(error)
    }
    // The slot is free before the caller hears of the outcome, so that it may queue again at once.
    const release = (): void => {
      this.running -= 1
      const active = (this.active.get(key) as number) - 1
      if (active === 0) this.active.delete(key)
      else this.active.set(key, active)
      const held = this.pending(key) - 1
      if (held === 0) {
        this.held.delete(key)
        // A key's turns matter only while it holds jobs: one that comes back later takes the turn then being served.
        this.nextTurn.delete(key)
      } else {
        this.held.set(key, held)
      }
      this.next()
    }
    outcome.then(
      value => { release(); task.resolve(value) },
      error => { release(); task.reject(error) }
    )
  }
}
