/**
 * 500 creates sent as one batch against the same 500 sent one by one, each
 * over one keep-alive connection, as in `npm run bench`, on a service and an
 * embedded PostgreSQL of its own: a short run for this figure alone.
 *
 *   npm run bench:batch
 */
import { request } from './lib/api'
import { batchAgainstSingles, batchTargets } from './lib/batch'
import { runBenchmark } from './lib/cleanup'
import { startDatabase } from './lib/database'
import { startService } from './lib/service'

async function main (): Promise<void> {
  console.log('Starting PostgreSQL and the service ...')
  const db = await startDatabase()
  const service = await startService(db.url, db.dir)
  const owner = await request(service.url, 'POST', '/api/auth/register', null, { email: 'batch@example.org', password: 'bench password 1', name: 'Batch' }) as { accessToken: string, user: { id: number } }
  const me = await request(service.url, 'GET', '/api/me', owner.accessToken) as { families: Array<{ id: number }> }
  const familyId = me.families[0].id
  const child = await request(service.url, 'POST', '/api/children', owner.accessToken, { name: 'Kim', dateOfBirth: '2020-01-01', sex: 'female', familyId }) as { id: number }
  const world = { serviceUrl: service.url, children: [], tokens: new Map([[owner.user.id, owner.accessToken]]) }
  console.log('500 creates: one batch (atomic, then not) against 500 single requests, one keep-alive connection, 3 times ...')
  const time = await batchAgainstSingles(world, { id: child.id, familyId, userId: owner.user.id })
  for (const line of batchTargets(time)) console.log(`  ${line.target}: ${line.figure}`)
}

runBenchmark(main)
