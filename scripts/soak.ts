import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { buildApp } from '../app'
import { startEmbeddedDatabase } from '../db/embedded'
import { loadConfig } from '../io/config'

/**
 * A longer load without loss than the test suite's: CLIENTS writers add
 * measurements and visits with measurements over loopback HTTP for SECONDS;
 * afterwards every 201 must be exactly one row, and no answer a 5xx. With
 * SOAK_INSTANCES=2 (or more) as many instances share the database and the
 * writers take turns between them; the change log must then hold exactly one
 * change for each row, numbered without a gap.
 */
const SECONDS = Number(process.env.SOAK_SECONDS ?? 60)
const CLIENTS = Number(process.env.SOAK_CLIENTS ?? 16)
const INSTANCES = Number(process.env.SOAK_INSTANCES ?? 1)
const QUIET = { info: () => {}, debug: () => {}, warn: (msg: string) => console.warn(msg) }

async function main (): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'child-health-soak-'))
  chmodSync(dir, 0o755)
  const db = await startEmbeddedDatabase(path.join(dir, 'postgres'), QUIET)
  const config = loadConfig({
    NODE_ENV: 'test', LOG_LEVEL: 'error', DATA_DIR: dir, DATABASE_URL: db.url, REGISTRATION: 'open', BCRYPT_COST: '10',
    JWT_SECRET: 'soak-access-secret-0123456789abcdefghijkl', JWT_REFRESH_SECRET: 'soak-refresh-secret-0123456789abcdefghij'
  })
  const apps = await Promise.all(Array.from({ length: INSTANCES }, () => buildApp(config)))
  const app = apps[0]
  try {
    const bases: string[] = []
    for (const one of apps) {
      await one.listen({ port: 0, host: '127.0.0.1' })
      bases.push(`http://127.0.0.1:${(one.server.address() as { port: number }).port}`)
    }
    let turn = 0
    const post = async (url: string, body: object, token?: string) => fetch(`${bases[turn++ % bases.length]}${url}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
      body: JSON.stringify(body)
    })
    const { accessToken } = await (await post('/api/auth/register', { email: 'soak@example.org', password: 'a long password', name: 'Soak' })).json() as { accessToken: string }
    const child = await (await post('/api/children', { name: 'Kim', dateOfBirth: '2015-01-01', sex: 'male' }, accessToken)).json() as { id: number }

    const acknowledged: number[] = []
    const statuses = new Map<number, number>()
    const until = Date.now() + SECONDS * 1000
    let n = 0
    await Promise.all(Array.from({ length: CLIENTS }, async () => {
      while (Date.now() < until) {
        n += 1
        const visit = n % 3 === 0
        const res = visit
          ? await post('/api/visits', { childId: child.id, date: '2020-06-01', type: 'wellness', measurement: { weightKg: 20 } }, accessToken)
          : await post(`/api/children/${child.id}/measurements`, { measuredAt: '2020-06-01', heightCm: 100 + (n % 100) }, accessToken)
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
        const body = await res.json() as { id: number, measurement?: { id: number } }
        if (res.status === 201) acknowledged.push(body.measurement?.id ?? body.id)
      }
    }))
    const [{ rows }] = await app.sql`select count(*) as rows from measurements`
    const [{ lonely }] = await app.sql`select count(*) as lonely from visits v where not exists (select 1 from measurements m where m.visit_id = v.id)`
    const [log] = await app.sql<{ changes: number, measurementChanges: number, first: number, last: number }[]>`
      select count(*)::int as changes, count(*) filter (where kind = 'measurement')::int as "measurementChanges",
             min(seq)::int as first, max(seq)::int as last
      from changes
    `
    const fivexx = [...statuses].filter(([status]) => status >= 500).reduce((sum, [, count]) => sum + count, 0)
    console.log(`soak: ${CLIENTS} clients on ${INSTANCES} instance(s) for ${SECONDS} s: ${acknowledged.length} writes acknowledged, ${rows} rows, ` +
      `${log.measurementChanges} measurement changes, statuses ${JSON.stringify(Object.fromEntries(statuses))}`)
    const problems = [
      ...(log.measurementChanges !== rows ? [`${rows} measurements but ${log.measurementChanges} changes of measurements`] : []),
      ...(log.last - log.first + 1 !== log.changes ? [`the change numbers have gaps: ${log.changes} changes from ${log.first} to ${log.last}`] : []),
      ...(rows !== acknowledged.length ? [`${acknowledged.length} writes acknowledged but ${rows} rows`] : []),
      ...(new Set(acknowledged).size !== acknowledged.length ? ['an id was acknowledged twice'] : []),
      ...(fivexx > 0 ? [`${fivexx} answers were 5xx`] : []),
      ...(lonely > 0 ? [`${lonely} visits without their measurement`] : [])
    ]
    if (problems.length > 0) throw new Error(problems.join('; '))
    console.log('soak: nothing lost')
  } finally {
    for (const one of apps) await one.close()
    await db.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

main().catch(error => {
  console.error(error instanceof Error ? error.message : error)
  process.exit(1)
})
