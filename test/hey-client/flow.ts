import { createClient } from './.generated/client'
import { createChild, createChildMeasurement, getMe, listChildMeasurements, register, runFamilyBatch } from './.generated'

/**
 * A short session written against the SDK that @hey-api/openapi-ts generates
 * from the service's OpenAPI document: it compiles under --strict only if the
 * document describes what the client sends and reads.
 */
export interface HeyFlow {
  names: string[]
  weights: Array<number | null>
  /** The Idempotent-Replayed header of a create sent again with its key, and whether it named the same measurement. */
  replayed: { header: string | null, sameId: boolean }
  /** The statuses of a batch's results, and whether it was rolled back. */
  batch: { statuses: number[], rolledBack: boolean }
}

export async function runHeyFlow (baseUrl: string): Promise<HeyFlow> {
  const client = createClient({ baseUrl })
  const owner = await register({
    client,
    body: { email: 'hey@example.org', password: 'a long enough password', name: 'Hey' },
    throwOnError: true
  })
  const headers = { authorization: `Bearer ${owner.data.accessToken}` }
  const me = await getMe({ client, headers, throwOnError: true })
  const child = await createChild({
    client,
    headers,
    body: { name: 'Robin', dateOfBirth: '2022-02-02', sex: 'other', familyId: me.data.families[0].id },
    throwOnError: true
  })
  // A create sent twice with one key, as a client retrying a lost answer does: written once.
  const create = async () => await createChildMeasurement({
    client,
    headers: { ...headers, 'idempotency-key': 'hey-measurement-1' },
    path: { childId: child.data.id },
    body: { measuredAt: '2023-02-02', weightKg: 9.125 },
    throwOnError: true
  })
  const created = await create()
  const again = await create()
  // What an offline client queued, sent in one batch that is written whole or not at all.
  const batch = await runFamilyBatch({
    client,
    headers,
    path: { id: me.data.families[0].id },
    body: {
      atomic: true,
      operations: [
        { method: 'POST', path: `/api/children/${child.data.id}/measurements`, body: { measuredAt: '2023-01-15', weightKg: 9.5 }, idempotencyKey: 'hey-queued-1' },
        { method: 'PATCH', path: `/api/measurements/${created.data.id}`, body: { notes: 'from the batch' }, ifMatch: '"1"' }
      ]
    },
    throwOnError: true
  })
  const list = await listChildMeasurements({ client, headers, path: { childId: child.data.id }, query: { limit: 10 }, throwOnError: true })
  return {
    names: [me.data.name, child.data.name],
    weights: list.data.data.map(measurement => measurement.weightKg),
    replayed: { header: again.response.headers.get('idempotent-replayed'), sameId: again.data.id === created.data.id },
    batch: { statuses: batch.data.results.map(result => result.status), rolledBack: batch.data.rolledBack }
  }
}
