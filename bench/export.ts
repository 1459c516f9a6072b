/**
 * The family export under load: a family of 5 children with their records
 * and attachment files, exported as a ZIP over real HTTP. Each scenario runs
 * in a process of its own, so that its peak memory is its own:
 *
 * - files: 2,500 records with 50 MB of files and with 5 MB, to show memory
 *   does not follow the files;
 * - records: 2,500 and 25,000 records with 5 MB of files, to show how memory
 *   follows the records.
 *
 *   npm run bench:export
 *   BENCH_FILES_MB=50,5,500 npm run bench:export   (other file sizes)
 *   BENCH_RECORDS=2500,50000 npm run bench:export  (other record counts)
 *
 * Uses DATABASE_URL's server when set (in a scratch database, dropped at the
 * end), otherwise an embedded PostgreSQL in a temporary directory.
 */
import { execFileSync } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import path from 'node:path'
import type { App } from '../app'
import { request } from './lib/api'
import { onServer, sampleMemory, scratchApp, type MemoryPeaks } from './lib/scratch'

const CHILDREN = 5
/** Visits, measurements, medical events and illnesses. */
const KINDS = 4
/** Records of each kind for each child in the files scenarios: 2,500 records in all. */
const RECORDS_PER_KIND = 125
/** The files of the records scenarios. */
const RECORDS_FILES_MB = 5
const FILES_PER_CHILD = 10
const RUNS = 5
const MB = 1024 * 1024

interface Result extends MemoryPeaks {
  filesMb: number
  records: number
  archiveBytes: number
  seconds: number[]
}

/**
 * Five children, `perKind` records of each kind each, and `filesMb` of
 * attachment files spread over them. Dates come back to 2019 every 2,000 days,
 * so that none is in the future.
 */
async function seed (app: App, origin: string, filesMb: number, perKind: number): Promise<{ token: string, familyId: number }> {
  const pair = await request(origin, 'POST', '/api/auth/register', null, { email: 'bench@example.org', password: 'bench password 1', name: 'Bench' })
  const token = pair.accessToken as string
  const familyId = (await request(origin, 'GET', '/api/me', token)).families[0].id as number
  const fileBytes = Math.round(filesMb * MB / (CHILDREN * FILES_PER_CHILD))
  const note = 'Seen at the clinic; all well. '.repeat(8)
  mkdirSync(app.config.uploadDir, { recursive: true })
  for (let c = 0; c < CHILDREN; c++) {
    const child = await request(origin, 'POST', '/api/children', token, { name: `Child ${c + 1}`, dateOfBirth: '2019-01-01', sex: c % 2 === 0 ? 'female' : 'male' })
    const sql = app.sql
    await sql`insert into visits (child_id, date, type, provider, notes) select ${child.id}, date '2019-01-01' + (i * 7) % 2000, 'wellness', 'Dr. Osei', ${note} from generate_series(1, ${perKind}) i`
    await sql`insert into measurements (child_id, measured_at, height_cm, weight_kg, head_circumference_cm, notes) select ${child.id}, date '2019-01-01' + (i * 7) % 2000, 50 + (i % 286) * 0.4, 3.5 + (i % 286) * 0.1, 35 + (i % 286) * 0.05, ${note} from generate_series(1, ${perKind}) i`
    await sql`insert into medical_events (child_id, date, type, name, description) select ${child.id}, date '2019-01-01' + (i * 7) % 2000, (array['vaccine', 'procedure', 'medication'])[1 + i % 3], 'MMR', ${note} from generate_series(1, ${perKind}) i`
    await sql`insert into illnesses (child_id, start_date, end_date, diagnosis, temperature_c, notes) select ${child.id}, date '2019-01-01' + (i * 7) % 2000, date '2019-01-03' + (i * 7) % 2000, 'Cold', 38.5, ${note} from generate_series(1, ${perKind}) i`
    for (let f = 0; f < FILES_PER_CHILD; f++) {
      const storedName = `${randomBytes(16).toString('hex')}.pdf`
      writeFileSync(path.join(app.config.uploadDir, storedName), randomBytes(fileBytes))
      await sql`
        insert into attachments (child_id, file_name, stored_name, content_type, size_bytes)
        values (${child.id}, ${`scan ${f + 1}.pdf`}, ${storedName}, 'application/pdf', ${fileBytes})
      `
    }
  }
  return { token, familyId }
}

/** Downloads the archive, hashing it as it arrives; answers its size. */
function download (origin: string, url: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http.get(`${origin}${url}`, { headers: { authorization: `Bearer ${token}` } }, res => {
      if (res.statusCode !== 200) return reject(new Error(`export answered ${res.statusCode}`))
      const hash = createHash('sha256')
      let size = 0
      res.on('data', (chunk: Buffer) => {
        size += chunk.length
        hash.update(chunk)
      })
      res.on('end', () => resolve(size))
      res.on('error', reject)
    }).on('error', reject)
  })
}

/** One scenario, in this process: its own database, app, seed and exports. */
async function scenario (serverUrl: string, filesMb: number, perKind: number): Promise<Result> {
  const { app, origin, drop } = await scratchApp(serverUrl, 'export', { LOG_LEVEL: 'warn' })
  try {
    const { token, familyId } = await seed(app, origin, filesMb, perKind)
    await app.growth.loading

    const memory = sampleMemory()
    const seconds: number[] = []
    let archiveBytes = 0
    for (let run = 0; run < RUNS; run++) {
      const start = process.hrtime.bigint()
      archiveBytes = await download(origin, `/api/families/${familyId}/export`, token)
      seconds.push(Number(process.hrtime.bigint() - start) / 1e9)
    }
    memory.stop()
    return { filesMb, records: perKind * CHILDREN * KINDS, archiveBytes, seconds, ...memory.peaks() }
  } finally {
    await drop()
  }
}

/**
 * With `heapMb`, the process's old space is capped there: V8 then collects
 * instead of growing, so the peak shows what the export holds rather than
 * the garbage a roomy heap lets wait.
 */
function runScenario (serverUrl: string, filesMb: number, perKind: number, heapMb: number | null = null): Result {
  const heap = heapMb === null ? [] : [`--max-old-space-size=${heapMb}`]
  const output = execFileSync(process.execPath, [...heap, '--import', 'tsx', __filename, '--scenario', serverUrl, String(filesMb), String(perKind)], {
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 16 * MB
  })
  return JSON.parse(output.toString().trim().split('\n').pop() as string)
}

const fixed = (value: number, digits = 1): string => value.toFixed(digits)

/** A comma-separated list of positive numbers from the environment. */
function numbers (name: string, fallback: string): number[] {
  const raw = process.env[name] ?? fallback
  const values = raw.split(',').map(item => Number(item.trim()))
  if (values.length === 0 || values.some(value => !Number.isFinite(value) || value <= 0)) {
    throw new Error(`${name} must be positive numbers separated by commas, not "${raw}"`)
  }
  return values
}

function describe (label: string, r: Result): string {
  const best = Math.min(...r.seconds)
  const median = [...r.seconds].sort((a, b) => a - b)[Math.floor(r.seconds.length / 2)]
  return [
    `${label}:`,
    `archive ${fixed(r.archiveBytes / MB)} MB,`,
    `time ${fixed(best, 2)} s best, ${fixed(median, 2)} s median (runs ${r.seconds.map(s => fixed(s, 2)).join(', ')}),`,
    `${fixed(r.archiveBytes / MB / best)} MB/s,`,
    `rss ${fixed(r.baselineRssMb)} MB before, peak ${fixed(r.peakRssMb)} MB (+${fixed(r.peakRssMb - r.baselineRssMb)} MB),`,
    `peak heap ${fixed(r.peakHeapMb)} MB`
  ].join(' ')
}

/** How memory grows with the records, from the smallest and the largest count. */
function perTenThousand (results: Result[]): string {
  const sorted = [...results].sort((a, b) => a.records - b.records)
  const small = sorted[0]
  const large = sorted[sorted.length - 1]
  if (large.records === small.records) return 'memory per 10,000 records: needs two record counts in BENCH_RECORDS'
  const scale = 10_000 / (large.records - small.records)
  const rss = ((large.peakRssMb - large.baselineRssMb) - (small.peakRssMb - small.baselineRssMb)) * scale
  const heap = (large.peakHeapMb - small.peakHeapMb) * scale
  const signed = (value: number): string => `${value < 0 ? '-' : '+'}${fixed(Math.abs(value))}`
  return `memory per 10,000 records: ${signed(rss)} MB rss, ${signed(heap)} MB heap (from ${small.records} to ${large.records} records)`
}

async function main (): Promise<void> {
  if (process.argv[2] === '--scenario') {
    const result = await scenario(process.argv[3], Number(process.argv[4]), Number(process.argv[5]))
    process.stdout.write(JSON.stringify(result) + '\n')
    return
  }
  const sizes = numbers('BENCH_FILES_MB', '50,5')
  // Record counts are totals over the five children and four kinds, rounded to a multiple of 20.
  const perKinds = [...new Set(numbers('BENCH_RECORDS', '2500,25000').map(total => Math.max(1, Math.round(total / (CHILDREN * KINDS)))))]
  await onServer(async serverUrl => {
    // A scenario asked for twice (5 MB of files with 2,500 records, by default) runs once.
    const done = new Map<string, Result>()
    const run = (filesMb: number, perKind: number): Result => {
      const key = `${filesMb}/${perKind}`
      if (!done.has(key)) done.set(key, runScenario(serverUrl, filesMb, perKind))
      return done.get(key) as Result
    }
    console.log(`family export: ${CHILDREN} children, ${CHILDREN * FILES_PER_CHILD} files; ${RUNS} runs each; memory of the server process`)
    console.log(`files, with ${RECORDS_PER_KIND * CHILDREN * KINDS} records:`)
    for (const filesMb of sizes) console.log(describe(`${String(filesMb).padStart(6)} MB of files`, run(filesMb, RECORDS_PER_KIND)))
    console.log(`records, with ${RECORDS_FILES_MB} MB of files:`)
    const byRecords = perKinds.map(perKind => run(RECORDS_FILES_MB, perKind))
    for (const r of byRecords) console.log(describe(`${String(r.records).padStart(6)} records`, r))
    console.log(perTenThousand(byRecords))
    const heapMb = numbers('BENCH_HEAP_MB', '72')[0]
    console.log(`records, with ${RECORDS_FILES_MB} MB of files, old space capped at ${heapMb} MB:`)
    const capped = perKinds.map(perKind => runScenario(serverUrl, RECORDS_FILES_MB, perKind, heapMb))
    for (const r of capped) console.log(describe(`${String(r.records).padStart(6)} records`, r))
    console.log(perTenThousand(capped))
  })
}

main().catch(error => {
  console.error(error)
  process.exit(1)
})
