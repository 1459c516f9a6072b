import os from 'node:os'
import { Worker } from 'node:worker_threads'

/**
 * bcrypt in worker threads, so that hashing a password never stalls the event
 * loop for other requests. bcrypt reads only 72 bytes: longer passwords are
 * refused by the schemas (see MAX_PASSWORD_BYTES), never cut silently.
 */

export const MIN_PASSWORD_BYTES = 8
export const MAX_PASSWORD_BYTES = 72

const WORKER = `
const { parentPort, workerData } = require('node:worker_threads')
const bcrypt = require(workerData.bcrypt)
// On Linux the nice value is per thread: hashing yields the CPU to requests.
try { require('node:os').setPriority(10) } catch {}
parentPort.on('message', ({ id, op, password, hash, cost }) => {
  try {
    const result = op === 'hash' ? bcrypt.hashSync(password, cost) : bcrypt.compareSync(password, hash)
    parentPort.postMessage({ id, result })
  } catch (error) {
    parentPort.postMessage({ id, error: String(error && error.message || error) })
  }
})
`

interface Job {
  resolve: (value: any) => void
  reject: (error: Error) => void
}

class Pool {
  private readonly workers: Worker[] = []
  private readonly jobs = new Map<number, Job>()
  private next = 0
  private turn = 0

  constructor (private readonly size: number) {}

  private worker (): Worker {
    if (this.workers.length < this.size) {
      const worker = new Worker(WORKER, { eval: true, workerData: { bcrypt: require.resolve('bcryptjs') } })
      worker.on('message', ({ id, result, error }) => {
        const job = this.jobs.get(id)
        this.jobs.delete(id)
        if (error !== undefined) job?.reject(new Error(error))
        else job?.resolve(result)
        this.idleWhenDone()
      })
      worker.on('error', error => {
        for (const job of this.jobs.values()) job.reject(error)
        this.jobs.clear()
        this.workers.splice(this.workers.indexOf(worker), 1)
      })
      worker.unref()
      this.workers.push(worker)
      return worker
    }
    this.turn = (this.turn + 1) % this.workers.length
    return this.workers[this.turn]
  }

  /** Idle workers do not keep the process alive; a worker with a job does. */
  private idleWhenDone (): void {
    if (this.jobs.size === 0) for (const worker of this.workers) worker.unref()
  }

  run<T> (message: Record<string, unknown>): Promise<T> {
    const id = this.next++
    return new Promise<T>((resolve, reject) => {
      this.jobs.set(id, { resolve, reject })
      const worker = this.worker()
      worker.ref()
      worker.postMessage({ id, ...message })
    })
  }
}

const pool = new Pool(Math.max(1, os.availableParallelism() - 1))

export function hashPassword (password: string, cost: number): Promise<string> {
  return pool.run<string>({ op: 'hash', password, cost })
}

export function verifyPassword (password: string, hash: string): Promise<boolean> {
  return pool.run<boolean>({ op: 'verify', password, hash })
}

/** A hash of a password nobody has, compared against when an account is unknown, so both answers take the same time. */
const dummyHashes = new Map<number, Promise<string>>()
export function dummyHash (cost: number): Promise<string> {
  let hash = dummyHashes.get(cost)
  if (hash === undefined) {
    hash = hashPassword(`no account ${Math.random()}`, cost)
    dummyHashes.set(cost, hash)
  }
  return hash
}

export function passwordBytes (password: string): number {
  return Buffer.byteLength(password, 'utf8')
}
