import { createSql } from '../../db/client'
import type { Target } from './report'
import type { World } from './scenarios'
import type { SeededChild } from './seed'

/**
 * Share links of a child with 5,000 records: the time to make one (read the
 * record in a snapshot, score its growth, build the FHIR document, encrypt
 * it, hash the passcode when there is one) and a viewer's manifest request.
 */

export interface Timing { runs: number[], bestMs: number, medianMs: number, p90Ms: number }

export interface ShareTimes {
  records: number
  /** The encrypted summary of the link, in bytes (the JWE). */
  summaryBytes: number
  create: Timing
  createWithPasscode: Timing
  manifest: Timing
  manifestWithPasscode: Timing
}

const RECORDS = { measurements: 3000, visits: 500, medicalEvents: 1000, illnesses: 500 }

function timing (runs: number[]): Timing {
  const sorted = [...runs].sort((a, b) => a - b)
  return { runs, bestMs: sorted[0], medianMs: sorted[Math.floor(sorted.length / 2)], p90Ms: sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.9))] }
}

async function timed (what: string, expected: number, send: () => Promise<Response>): Promise<{ ms: number, body: any }> {
  const start = process.hrtime.bigint()
  const res = await send()
  const text = await res.text()
  const ms = Number(process.hrtime.bigint() - start) / 1e6
  if (res.status !== expected) throw new Error(`${what} answered ${res.status} instead of ${expected}: ${text.slice(0, 300)}`)
  return { ms: Math.round(ms * 10) / 10, body: JSON.parse(text) }
}

/** A child of the family of `owner` with 5,000 records of four kinds, written through SQL. */
async function childWithRecords (databaseUrl: string, familyId: number): Promise<{ id: number, records: number }> {
  const sql = createSql(databaseUrl, { max: 1 })
  try {
    return await sql.begin(async tx => {
      const [child] = await tx<{ id: number }[]>`
        insert into children (family_id, name, date_of_birth, sex) values (${familyId}, 'Shared', current_date - 3000, 'female') returning id
      `
      await tx`
        insert into visits (child_id, date, type, provider)
        select ${child.id}, current_date - 3000 + (k * 5), (array['wellness', 'sick', 'dental'])[1 + k % 3], 'Dr. Martin'
        from generate_series(1, ${RECORDS.visits}) k
      `
      await tx`
        insert into measurements (child_id, measured_at, height_cm, weight_kg, head_circumference_cm)
        select ${child.id}, current_date - 3000 + k, round(50 + 80 * (k / 3000.0), 1), round(3.3 + 20 * (k / 3000.0), 3),
               case when k < 1000 then round(34.5 + 12 * (k / 1000.0), 1) end
        from generate_series(1, ${RECORDS.measurements}) k
      `
      await tx`
        insert into medical_events (child_id, date, type, name)
        select ${child.id}, current_date - 3000 + (k * 2), (array['vaccine', 'medication', 'procedure'])[1 + k % 3], 'Event ' || k
        from generate_series(1, ${RECORDS.medicalEvents}) k
      `
      await tx`
        insert into illnesses (child_id, start_date, end_date, diagnosis, temperature_c)
        select ${child.id}, current_date - 3000 + (k * 5), current_date - 2997 + (k * 5), 'Cold', 38.2
        from generate_series(1, ${RECORDS.illnesses}) k
      `
      const records = Object.values(RECORDS).reduce((sum, n) => sum + n, 0)
      return { id: child.id, records }
    })
  } finally {
    await sql.end({ timeout: 5 })
  }
}

/**
 * Makes links of a child with 5,000 records, `runs` times without a passcode
 * and `runs` times with one, each timed to its answer, then times `requests`
 * manifest requests of each kind of link, one after the other.
 */
export async function shareTimes (world: World, databaseUrl: string, owner: SeededChild, runs = 5, requests = 20): Promise<ShareTimes> {
  const child = await childWithRecords(databaseUrl, owner.familyId)
  const headers = { authorization: `Bearer ${world.tokens.get(owner.userId) as string}`, 'content-type': 'application/json' }
  const expiresAt = new Date(Date.now() + 86_400_000).toISOString()
  const make = (passcode: string | null) => timed('making a share link', 201, async () => await fetch(`${world.serviceUrl}/api/children/${child.id}/shares`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ label: 'Benchmark', expiresAt, ...(passcode === null ? {} : { passcode }) }),
    signal: AbortSignal.timeout(120_000)
  }))
  const ask = (url: string, passcode: string | null) => timed('a manifest request', 200, async () => await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ recipient: 'Benchmark viewer', ...(passcode === null ? {} : { passcode }) }),
    signal: AbortSignal.timeout(60_000)
  }))
  const urlOf = (link: string): string => JSON.parse(Buffer.from(link.slice('shlink:/'.length), 'base64url').toString()).url
  const plain: number[] = []
  const locked: number[] = []
  let plainLink = ''
  let lockedLink = ''
  for (let run = 0; run < runs; run++) {
    const made = await make(null)
    plain.push(made.ms)
    plainLink = made.body.link
    const withPasscode = await make('bench 2468')
    locked.push(withPasscode.ms)
    lockedLink = withPasscode.body.link
  }
  const manifest: number[] = []
  const manifestWithPasscode: number[] = []
  let summaryBytes = 0
  for (let i = 0; i < requests; i++) {
    const answer = await ask(urlOf(plainLink), null)
    manifest.push(answer.ms)
    summaryBytes = answer.body.files[0].embedded.length
    manifestWithPasscode.push((await ask(urlOf(lockedLink), 'bench 2468')).ms)
  }
  return {
    records: child.records,
    summaryBytes,
    create: timing(plain),
    createWithPasscode: timing(locked),
    manifest: timing(manifest),
    manifestWithPasscode: timing(manifestWithPasscode)
  }
}

export function shareLines (times: ShareTimes): string {
  return `Share links of a child with ${times.records.toLocaleString('en')} records (summary ${(times.summaryBytes / 1e6).toFixed(2)} MB encrypted): ` +
    `making one, median ${times.create.medianMs} ms (best ${times.create.bestMs}), with a passcode ${times.createWithPasscode.medianMs} ms; ` +
    `a manifest request, median ${times.manifest.medianMs} ms (p90 ${times.manifest.p90Ms}), with a passcode ${times.manifestWithPasscode.medianMs} ms (p90 ${times.manifestWithPasscode.p90Ms})`
}

export function shareTargets (times: ShareTimes | null): Target[] {
  if (times === null) return []
  const records = times.records.toLocaleString('en')
  return [
    {
      target: `making a share link of a child with ${records} records, time to its answer`,
      figure: `median ${times.create.medianMs} ms, best ${times.create.bestMs} ms (${times.create.runs.join(', ')} ms); with a passcode median ${times.createWithPasscode.medianMs} ms`,
      met: null
    },
    {
      target: 'a share link\'s manifest request, time to its answer (the summary embedded)',
      figure: `median ${times.manifest.medianMs} ms, p90 ${times.manifest.p90Ms} ms; with a passcode (bcrypt at the run's cost) median ${times.manifestWithPasscode.medianMs} ms, p90 ${times.manifestWithPasscode.p90Ms} ms; ${times.summaryBytes} bytes of JWE`,
      met: null
    }
  ]
}
