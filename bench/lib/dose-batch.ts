import { request } from './api'

export interface DoseBatchTime {
  operations: number
  /** The batch's time in ms, from the request to its answer. */
  ms: number
  /** What the batch answered: 200 with every dose written, or the status and code of its refusal. */
  answer: string
  /** How long after another family's write answered its change was in that family's changes feed, in ms. */
  otherFeedMs: number
}

interface Caller { serviceUrl: string, token: string, familyId: number, childId: number }

/** How long until `check` holds, polled every 20 ms, in ms; gives up after `ms`. */
async function waited (check: () => Promise<boolean>, ms: number): Promise<number> {
  const start = Date.now()
  while (!(await check())) {
    if (Date.now() - start > ms) throw new Error(`not within ${ms} ms`)
    await new Promise(resolve => setTimeout(resolve, 20))
  }
  return Date.now() - start
}

/** Another family's write and the time until its changes feed shows it. */
async function otherFamilyWrite (other: Caller): Promise<number> {
  const cursor = (await request(other.serviceUrl, 'GET', `/api/families/${other.familyId}/changes?limit=1000`, other.token) as { meta: { nextCursor: string } }).meta.nextCursor
  const made = await request(other.serviceUrl, 'POST', `/api/children/${other.childId}/measurements`, other.token, { measuredAt: '2024-01-01', weightKg: 10 }) as { id: number }
  return await waited(async () => {
    const page = await request(other.serviceUrl, 'GET', `/api/families/${other.familyId}/changes?limit=1000&since=${cursor}`, other.token) as { data: Array<{ id: number }> }
    return page.data.some(change => change.id === made.id)
  }, 300_000)
}

/**
 * One atomic batch of 500 doses of one medicine course, each given an hour
 * before the one sent before it (so each is earlier than every dose already
 * written), and, half a second into it, a write of another family, timed
 * until that family's changes feed shows it.
 */
export async function doseBatch (batcher: Caller, other: Caller, operations = 500): Promise<DoseBatchTime> {
  const course = await request(batcher.serviceUrl, 'POST', `/api/children/${batcher.childId}/medicine-courses`, batcher.token, {
    name: 'Paracetamol', doseAmount: 5, doseUnit: 'ml', minIntervalHours: 4, maxDosesPer24h: 3, startDate: '2023-01-01'
  }) as { id: number }
  const last = Date.parse('2024-06-01T00:00:00Z')
  const doses = Array.from({ length: operations }, (_, i) => ({
    method: 'POST', path: `/api/medicine-courses/${course.id}/doses`, body: { givenAt: new Date(last - i * 3600_000).toISOString() }
  }))
  const start = Date.now()
  const sent = fetch(`${batcher.serviceUrl}/api/families/${batcher.familyId}/batch`, {
    method: 'POST',
    headers: { authorization: `Bearer ${batcher.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ atomic: true, operations: doses }),
    signal: AbortSignal.timeout(300_000)
  }).then(async res => ({ status: res.status, json: await res.json() as any, ms: Date.now() - start }))
  await new Promise(resolve => setTimeout(resolve, 500))
  const otherFeedMs = await otherFamilyWrite(other)
  const { status, json, ms } = await sent
  const written = status === 200 && json.rolledBack === false && json.results.every((result: { status: number }) => result.status === 201)
  return { operations, ms, answer: written ? `200, ${operations} doses written` : `${status} ${json.code ?? json.failedOperation}`, otherFeedMs }
}
