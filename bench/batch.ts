/**
 * 500 creates sent as one batch against the same 500 sent one by one, each
 * over one keep-alive connection, as in `npm run bench`, then 500 doses of a
 * medicine course in one atomic batch, each earlier than the others, while
 * another family writes, on a service and an embedded PostgreSQL of its own:
 * a short run for these figures alone.
 *
 *   npm run bench:batch
 */
import { request } from './lib/api'
import { batchAgainstSingles, batchTargets } from './lib/batch'
import { doseBatch } from './lib/dose-batch'
import { runBenchmark } from './lib/cleanup'
import { startDatabase } from './lib/database'
import { startService } from './lib/service'

async function main (): Promise<void> {
  console.log('Starting PostgreSQL and the service ...')
  const db = await startDatabase()
  // BATCH_ATOMIC_TIMEOUT_MS, when set, reaches the service: a long one times a batch that the default would cut.
  const limit = process.env.BATCH_ATOMIC_TIMEOUT_MS
  const service = await startService(db.url, db.dir, { env: limit === undefined ? {} : { BATCH_ATOMIC_TIMEOUT_MS: limit } })
  const owner = await request(service.url, 'POST', '/api/auth/register', null, { email: 'batch@example.org', password: 'bench password 1', name: 'Batch' }) as { accessToken: string, user: { id: number } }
  const me = await request(service.url, 'GET', '/api/me', owner.accessToken) as { families: Array<{ id: number }> }
  const familyId = me.families[0].id
  const child = await request(service.url, 'POST', '/api/children', owner.accessToken, { name: 'Kim', dateOfBirth: '2020-01-01', sex: 'female', familyId }) as { id: number }
  const world = { serviceUrl: service.url, children: [], tokens: new Map([[owner.user.id, owner.accessToken]]) }
  console.log('500 creates: one batch (atomic, then not) against 500 single requests, one keep-alive connection, 3 times ...')
  const time = await batchAgainstSingles(world, { id: child.id, familyId, userId: owner.user.id })
  for (const line of batchTargets(time)) console.log(`  ${line.target}: ${line.figure}`)
  const other = await request(service.url, 'POST', '/api/auth/register', null, { email: 'other@example.org', password: 'bench password 2', name: 'Other' }) as { accessToken: string }
  const otherFamily = (await request(service.url, 'GET', '/api/me', other.accessToken) as { families: Array<{ id: number }> }).families[0].id
  const otherChild = await request(service.url, 'POST', '/api/children', other.accessToken, { name: 'Sam', dateOfBirth: '2020-01-01', sex: 'male', familyId: otherFamily }) as { id: number }
  console.log('500 doses of one course in one atomic batch, each an hour before the one sent before it, and another family\'s write meanwhile ...')
  const doses = await doseBatch(
    { serviceUrl: service.url, token: owner.accessToken, familyId, childId: child.id },
    { serviceUrl: service.url, token: other.accessToken, familyId: otherFamily, childId: otherChild.id }
  )
  console.log(`  the batch: ${doses.ms} ms, ${doses.answer}; another family's write in its changes feed ${doses.otherFeedMs} ms after it answered`)
}

runBenchmark(main)
