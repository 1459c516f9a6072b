import path from 'node:path'
import { announcedPort, startProcess } from './processes'
import { baseEnv, ROOT } from './service'

export interface Floors {
  memory: string
  read: string
  write: string
  /** The write floor with change tracking turned off on its connections. */
  untrackedWrite: string
}

/** Each floor runs in a process of its own, so that none shares an event loop with the service or the load. */
async function startFloor (name: string, file: string, env: Record<string, string>): Promise<string> {
  const floor = startProcess(name, ['--import', 'tsx', path.join('bench', 'floors', file)], { ...baseEnv(), NODE_ENV: 'production', ...env }, ROOT)
  const port = await announcedPort(floor)
  return `http://127.0.0.1:${port}`
}

export async function startFloors (databaseUrl: string, payloadFile: string): Promise<Floors> {
  const [memory, read, write, untrackedWrite] = await Promise.all([
    startFloor('the in-memory floor', 'memory.ts', { PAYLOAD_FILE: payloadFile }),
    startFloor('the database read floor', 'db-read.ts', { DATABASE_URL: databaseUrl }),
    startFloor('the database write floor', 'db-write.ts', { DATABASE_URL: databaseUrl }),
    startFloor('the database write floor without change tracking', 'db-write.ts', { DATABASE_URL: databaseUrl, CHANGE_TRACKING: 'off' })
  ])
  return { memory, read, write, untrackedWrite }
}
