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
}

/**
 * Work of many clients on a small pool (password hashing, image decoding).
 * At most `concurrency` jobs run at once. Each key (a user, an address) has a
 * queue of its own, and the queues are served in turns, one job each: a key
 * that floods the pool waits behind its own jobs, and delays another key by
 * at most one job per running slot. A key may hold at most `perKey` jobs
 * waiting or running; one more is refused at once with QueueFull.
 */
export class FairQueue {
  private running = 0
  private readonly waiting = new Map<string, Task[]>()
  private readonly held = new Map<string, number>()

  constructor (readonly concurrency: number, readonly perKey: number) {
    if (concurrency < 1 || perKey < 1) throw new RangeError('a queue needs at least one slot and one job per key')
  }

  /** Jobs of this key waiting or running. */
  pending (key: string): number {
    return this.held.get(key) ?? 0
  }

  run<T> (key: string, job: () => Promise<T>): Promise<T> {
    const held = this.pending(key)
    if (held >= this.perKey) return Promise.reject(new QueueFull(key))
    this.held.set(key, held + 1)
    return new Promise<T>((resolve, reject) => {
      const queue = this.waiting.get(key)
      const task: Task = { run: job, resolve, reject }
      if (queue === undefined) this.waiting.set(key, [task])
      else queue.push(task)
      this.next()
    })
  }

  /** Starts jobs while slots are free, one from each key in turn (a Map keeps the keys in the order they queued). */
  private next (): void {
    while (this.running < this.concurrency && this.waiting.size > 0) {
      const [key, queue] = this.waiting.entries().next().value as [string, Task[]]
      const task = queue.shift() as Task
      // The key goes to the back of the line: a key that still waits queues again behind the others.
      this.waiting.delete(key)
      if (queue.length > 0) this.waiting.set(key, queue)
      this.running += 1
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
      const held = this.pending(key) - 1
      if (held === 0) this.held.delete(key)
      else this.held.set(key, held)
      this.next()
    }
    outcome.then(
      value => { release(); task.resolve(value) },
      error => { release(); task.reject(error) }
    )
  }
}
