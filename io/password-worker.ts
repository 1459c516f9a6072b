import { parentPort } from 'node:worker_threads'
import { compareSync, hashSync } from 'bcryptjs'

// A thread of the password pool (io/passwords.ts): one bcrypt job a message,
// answered with its result or its error.

interface Job {
  op: 'hash' | 'verify'
  password: string
  hash?: string
  cost?: number
}

parentPort?.on('message', ({ op, password, hash, cost }: Job) => {
  try {
    const result = op === 'hash' ? hashSync(password, cost) : compareSync(password, hash as string)
    parentPort?.postMessage({ result })
  } catch (error) {
    parentPort?.postMessage({ error: String((error as Error | undefined)?.message || error) })
  }
})
