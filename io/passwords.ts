import os from 'node:os'
import path from 'node:path'
import { Worker, type WorkerOptions } from 'node:worker_threads'
import { errors, withRetryAfter } from '../lib/errors'
import { FairQueue, QueueFull } from '../lib/fair-queue'

/**
 * bcrypt in worker threads, so that hashing a password never stalls the event
 * loop for other requests. bcrypt reads only 72 bytes: longer passwords are
 * refused by the schemas (see MAX_PASSWORD_BYTES in lib/account-schemas.ts),
 * never cut silently.
 */

/** Password jobs one key (an account, an e-mail) may have waiting or running; one more is a 429. */
export const PASSWORD_JOBS_PER_KEY = 2

/** When a key whose jobs fill its share may try again, in seconds: about one job of the highest cost. */
export const PASSWORD_RETRY_AFTER = 1

// The workers keep the process's priority. They are one fewer than the cores,
// so that they leave the event loop a core, but at least two, and one account
// runs at most all of them but one: another account's check never waits for a
// flood's checks, only shares the cores with them. With one thread, a login
// under a flood waited for the check running before its own, twice its time
// alone. Niced (10), a worker got about a tenth of a core as soon as the event
// loop, PostgreSQL or another process wanted the rest, and a flood of refused
// requests, cheap each but many, made another user's login five to ten times
// slower.

/** The workers' file beside this one: password-worker.js once built, password-worker.ts from source. */
const WORKER_FILE = path.join(__dirname, "..", "io", `password-worker${path.extname(__filename)}`)

/**
 * From source, tsx compiles the worker through its require hook. A thread
 * does not get the module hooks its parent registered with `--import` (Node
 * 20), yet an `--import`, among the arguments or in NODE_OPTIONS, has Node
 * load the thread's file as an ES module, which knows no .ts: the thread
 * starts without them.
 */
function workerOptions (): WorkerOptions {
  if (!WORKER_FILE.endsWith('.ts')) return {}
  const { NODE_OPTIONS: _imports, ...env } = process.env
  return { execArgv: ['--require', require.resolve('tsx/cjs')], env }
}

interface Job {
  resolve: (value: any) => void
  reject: (error: Error) => void
}

/** Worker threads that each run one job at a time; the queue in front of it never gives it more jobs than it has threads. */
class Pool {
  private readonly live = new Set<Worker>()
  private readonly idle: Worker[] = []
  private readonly busy = new Map<Worker, Job>()

  constructor (readonly size: number) {}

  /** The threads running now, idle or busy. */
  get threads (): number {
    return this.live.size
  }

  private worker (): Worker {
    const idle = this.idle.pop()
    if (idle !== undefined) return idle
    if (this.live.size >= this.size) throw new Error('the password pool was given more jobs than it has threads')
    const worker = new Worker(WORKER_FILE, workerOptions())
    this.live.add(worker)
    worker.on('message', ({ result, error }) => {
      const job = this.busy.get(worker)
      this.busy.delete(worker)
      // An idle worker does not keep the process alive; a worker with a job does.
      worker.unref()
      this.idle.push(worker)
      if (error !== undefined) job?.reject(new Error(error))
      else job?.resolve(result)
    })
    worker.on('error', error => this.forget(worker, error))
    worker.on('exit', () => this.forget(worker, new Error('the password worker ended')))
    return worker
  }

  /** A thread that failed or ended: its job fails, and a new thread takes its place when needed. */
  private forget (worker: Worker, error: Error): void {
    this.busy.get(worker)?.reject(error)
    this.busy.delete(worker)
    const at = this.idle.indexOf(worker)
    if (at !== -1) this.idle.splice(at, 1)
    this.live.delete(worker)
  }

  run<T> (message: Record<string, unknown>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const worker = this.worker()
      this.busy.set(worker, { resolve, reject })
      worker.ref()
      worker.postMessage(message)
    })
  }

  /** Ends every thread; a job after this starts new ones. */
  async close (): Promise<void> {
    await Promise.all([...this.live].map(worker => worker.terminate()))
  }
}

const pool = new Pool(Math.max(2, os.availableParallelism() - 1))

/**
 * The pool's jobs, served in turns between keys: a flood of one account waits
 * behind its own jobs, and holds at most all threads but one, so another
 * account's job starts at once.
 */
const work = new FairQueue(pool.size, PASSWORD_JOBS_PER_KEY, pool.size - 1)

let holders = 0

/**
 * An app holds the password threads while it runs; the answer lets go of
 * them, and the threads end when the last holder of the process lets go.
 */
export function holdPasswordWorkers (): () => Promise<void> {
  holders += 1
  let held = true
  return async () => {
    if (!held) return
    held = false
    holders -= 1
    if (holders === 0) await pool.close()
  }
}

/** The password threads running now. */
export function passwordWorkers (): number {
  return pool.threads
}

/** The key of a password job: the account it is for, or the e-mail of one that does not exist (a login, a registration). */
export const passwordKey = {
  user: (id: number): string => `user:${id}`,
  email: (email: string): string => `email:${email.toLowerCase()}`,
  /** A share link's passcode: its checks take turns with everyone's. */
  share: (id: number): string => `share:${id}`
}

function refusal (): Error {
  const refused = new errors.rateLimited(`Too many password checks for this account are already waiting; retry in ${PASSWORD_RETRY_AFTER} second`)
  return withRetryAfter(refused, PASSWORD_RETRY_AFTER)
}

async function inTurn<T> (key: string, message: Record<string, unknown>): Promise<T> {
  try {
    return await work.run(key, () => pool.run<T>(message))
  } catch (error) {
    throw error instanceof QueueFull ? refusal() : error
  }
}

/**
 * Throws the 429 a password job of `key` would get now, so that a request
 * refused anyway costs no more work (a query for the hash, for instance).
 */
export function checkPasswordTurn (key: string): void {
  if (work.pending(key) >= PASSWORD_JOBS_PER_KEY) throw refusal()
}

/** A bcrypt hash of the password, made in `key`'s turn; a 429 error when the key already has its share of jobs. */
export function hashPassword (password: string, cost: number, key: string): Promise<string> {
  return inTurn<string>(key, { op: 'hash', password, cost })
}

/** Whether the password matches the hash, checked in `key`'s turn; a 429 error when the key already has its share of jobs. */
export function verifyPassword (password: string, hash: string, key: string): Promise<boolean> {
  return inTurn<boolean>(key, { op: 'verify', password, hash })
}

/** A hash of a password nobody has, compared against when an account is unknown, so both answers take the same time. */
const dummyHashes = new Map<number, Promise<string>>()
export function dummyHash (cost: number): Promise<string> {
  let hash = dummyHashes.get(cost)
  if (hash === undefined) {
    hash = hashPassword(`no account ${Math.random()}`, cost, `dummy:${cost}`)
    dummyHashes.set(cost, hash)
  }
  return hash
}
