import createClient from 'openapi-fetch'
import type { paths } from './.generated/api'

/** A step's answer, for the test to check. */
export interface Step {
  name: string
  status: number
}

function check<T> (steps: Step[], name: string, result: { data?: T, error?: unknown, response: Response }, expected: number): T {
  steps.push({ name, status: result.response.status })
  if (result.response.status !== expected || result.data === undefined && expected !== 204) {
    throw new Error(`${name}: answered ${result.response.status}: ${JSON.stringify(result.error)}`)
  }
  return result.data as T
}

/**
 * A whole session of a family's client, written against the types generated
 * from the service's own OpenAPI document: it compiles only if the document
 * describes what the client sends and reads.
 */
export async function runFlow (baseUrl: string, files: { png: ArrayBuffer }): Promise<Step[]> {
  const steps: Step[] = []
  const client = createClient<paths>({ baseUrl })
  const signed = (token: string) => ({ headers: { authorization: `Bearer ${token}` } })

  const owner = check(steps, 'register', await client.POST('/api/auth/register', {
    body: { email: 'parent@example.org', password: 'a long enough password', name: 'Parent' }
  }), 201)
  const me = check(steps, 'me', await client.GET('/api/me', signed(owner.accessToken)), 200)
  const familyId = me.families[0].id

  const invite = check(steps, 'invite', await client.POST('/api/families/{id}/invites', {
    ...signed(owner.accessToken),
    params: { path: { id: familyId } },
    body: { email: 'grandma@example.org', role: 'viewer' }
  }), 201)
  const grandma = check(steps, 'register with the invite', await client.POST('/api/auth/register', {
    body: { email: 'grandma@example.org', password: 'another long password', name: 'Grandma', inviteToken: invite.token }
  }), 201)
  const members = check(steps, 'members', await client.GET('/api/families/{id}/members', {
    ...signed(grandma.accessToken), params: { path: { id: familyId } }
  }), 200)
  if (members.data.length !== 2) throw new Error('the invited user is not a member')

  const child = check(steps, 'create child', await client.POST('/api/children', {
    ...signed(owner.accessToken), body: { name: 'Kim', dateOfBirth: '2022-03-15', sex: 'female', familyId }
  }), 201)
  for (const [measuredAt, weightKg, heightCm] of [['2022-06-15', 6.4, 61.5], ['2022-09-15', 8.1, 68]] as const) {
    check(steps, 'add measurement', await client.POST('/api/children/{childId}/measurements', {
      ...signed(owner.accessToken), params: { path: { childId: child.id } }, body: { measuredAt, weightKg, heightCm }
    }), 201)
  }
  const visit = check(steps, 'visit with a measurement', await client.POST('/api/visits', {
    ...signed(owner.accessToken),
    body: { childId: child.id, date: '2022-12-15', type: 'wellness', provider: 'Dr. Ode', measurement: { weightKg: 9.3, heightCm: 73.2 } }
  }), 201)
  if (visit.measurement?.visitId !== visit.id) throw new Error('the visit\'s measurement is not linked to it')

  const listed = check(steps, 'list with filter and sort', await client.GET('/api/measurements', {
    ...signed(grandma.accessToken),
    params: { query: { childId: child.id, from: '2022-07-01', sort: 'measuredAt', limit: 10 } }
  }), 200)
  if (listed.meta.total !== 2 || listed.data[0].measuredAt !== '2022-09-15') throw new Error('the filtered list is wrong')

  const form = new FormData()
  form.append('file', new Blob([files.png], { type: 'image/png' }), 'rash.png')
  form.append('visitId', String(visit.id))
  const attachment = check(steps, 'upload attachment', await client.POST('/api/children/{childId}/attachments', {
    ...signed(owner.accessToken),
    params: { path: { childId: child.id } },
    body: form as never,
    bodySerializer: body => body as unknown as FormData
  }), 201)
  if (attachment.contentType !== 'image/png' || attachment.visitId !== visit.id) throw new Error('the attachment is wrong')

  const growth = check(steps, 'growth', await client.GET('/api/children/{childId}/growth', {
    ...signed(grandma.accessToken), params: { path: { childId: child.id } }
  }), 200)
  if (growth.points.length !== 3) throw new Error('growth has not every measurement')

  // Conditional reads: the ETag of a list, sent back, is a 304 until something changes.
  const first = await client.GET('/api/children/{childId}/measurements', { ...signed(grandma.accessToken), params: { path: { childId: child.id } } })
  const etag = first.response.headers.get('etag') ?? ''
  const unchanged = await client.GET('/api/children/{childId}/measurements', {
    params: { path: { childId: child.id }, header: { 'if-none-match': etag } },
    headers: { authorization: `Bearer ${grandma.accessToken}` }
  })
  steps.push({ name: 'list not modified', status: unchanged.response.status })

  // Optimistic locking: a write that names a stale version is refused.
  const measurement = listed.data[0]
  const stale = await client.PUT('/api/measurements/{id}', {
    ...signed(owner.accessToken),
    params: { path: { id: measurement.id }, header: { 'if-match': `"${measurement.version + 1}"` } },
    body: { measuredAt: measurement.measuredAt, weightKg: 8.2 }
  })
  if (stale.error?.code !== 'PRECONDITION_FAILED') throw new Error('a stale If-Match was not refused')
  steps.push({ name: 'stale write refused', status: stale.response.status })
  const current = check(steps, 'write with the current version', await client.PUT('/api/measurements/{id}', {
    ...signed(owner.accessToken),
    params: { path: { id: measurement.id }, header: { 'if-match': `"${measurement.version}"` } },
    body: { measuredAt: measurement.measuredAt, weightKg: 8.2 }
  }), 200)
  if (current.version !== measurement.version + 1) throw new Error('the version did not move on')

  // Delta sync: the feed from the start, then from its cursor, which now holds nothing new.
  const feed = check(steps, 'changes', await client.GET('/api/families/{id}/changes', {
    ...signed(grandma.accessToken), params: { path: { id: familyId } }
  }), 200)
  const last = feed.data[feed.data.length - 1]
  if (last.kind !== 'measurement' || last.op !== 'updated' || last.id !== measurement.id) throw new Error('the feed does not end with the last write')
  const later = check(steps, 'changes since the cursor', await client.GET('/api/families/{id}/changes', {
    ...signed(grandma.accessToken), params: { path: { id: familyId }, query: { since: feed.meta.nextCursor } }
  }), 200)
  if (later.data.length !== 0 || later.meta.nextCursor !== feed.meta.nextCursor) throw new Error('the cursor did not hold its place')

  const refreshed = check(steps, 'refresh', await client.POST('/api/auth/refresh', { body: { refreshToken: owner.refreshToken } }), 200)
  check(steps, 'logout', await client.POST('/api/auth/logout', { ...signed(refreshed.accessToken), body: {} }), 204)
  const after = await client.GET('/api/me', signed(refreshed.accessToken))
  steps.push({ name: 'refused after logout', status: after.response.status })
  return steps
}
