import { createClient } from './.generated/client'
import { createChild, createChildMeasurement, getMe, listChildMeasurements, register } from './.generated'

/**
 * A short session written against the SDK that @hey-api/openapi-ts generates
 * from the service's OpenAPI document: it compiles under --strict only if the
 * document describes what the client sends and reads.
 */
export async function runHeyFlow (baseUrl: string): Promise<{ names: string[], weights: Array<number | null> }> {
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
  await createChildMeasurement({
    client,
    headers,
    path: { childId: child.data.id },
    body: { measuredAt: '2023-02-02', weightKg: 9.125 },
    throwOnError: true
  })
  const list = await listChildMeasurements({ client, headers, path: { childId: child.data.id }, query: { limit: 10 }, throwOnError: true })
  return { names: [me.data.name, child.data.name], weights: list.data.data.map(measurement => measurement.weightKg) }
}
