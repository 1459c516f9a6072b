import { randomBytes } from 'node:crypto'
import { createSql } from '../../../db/client'
import { withDatabase } from '../api'
import { onCleanup } from '../cleanup'

/** The server the side-by-side run uses: PEER_DATABASE_URL, by default the machine's PostgreSQL. */
export function peerServer (): string {
  const given = process.env.PEER_DATABASE_URL
  return given === undefined || given === '' ? 'postgres://postgres@127.0.0.1:5432/' : given
}

/**
 * Creates a fresh database for each name on the server, with a suffix of the
 * run's own, and drops them at the end of the run, on a failure and on Ctrl-C.
 * Returns each one's URL, in the order of `names`.
 */
export async function freshDatabases (server: string, names: string[]): Promise<string[]> {
  const suffix = randomBytes(3).toString('hex')
  const databases = names.map(name => `bench_peer_${name}_${suffix}`)
  const admin = createSql(withDatabase(server, 'postgres'), { max: 1, onnotice: () => {} })
  const created: string[] = []
  onCleanup('dropping the databases', async () => {
    const sql = createSql(withDatabase(server, 'postgres'), { max: 1, onnotice: () => {} })
    try {
      for (const name of created) await sql.unsafe(`drop database if exists ${name} with (force)`)
    } finally {
      await sql.end({ timeout: 5 })
    }
  })
  try {
    for (const name of databases) {
      await admin.unsafe(`create database ${name}`)
      created.push(name)
    }
  } finally {
    await admin.end({ timeout: 5 })
  }
  return databases.map(name => withDatabase(server, name))
}

/** Vacuums, analyzes and checkpoints a seeded database, so that no load pays for the seeding's aftermath. */
export async function settle (url: string): Promise<void> {
  const sql = createSql(url, { max: 1, onnotice: () => {} })
  try {
    await sql`vacuum (analyze)`
    await sql`checkpoint`
  } finally {
    await sql.end({ timeout: 5 })
  }
}
