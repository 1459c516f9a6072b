/**
 * The family import: a family of 5 children with 20,000 records and 500 MB of
 * attachment files is exported as a ZIP over real HTTP, then imported into a
 * fresh database over real HTTP by a process of its own, whose time and peak
 * memory are reported (the process serves the import and sends the archive,
 * streamed from disk).
 *
 *   npm run bench:import
 *   BENCH_FILES_MB=50 BENCH_RECORDS=2000 npm run bench:import   (other sizes)
 *
 * Uses DATABASE_URL's server when set (in scratch databases, dropped at the
 * end), otherwise an embedded PostgreSQL in a temporary directory.
 */
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmodSync, createReadStream, createWriteStream, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { pipeline } from 'node:stream/promises'
import { buildApp, type App } from '../app'
import { startEmbeddedDatabase } from '../db/embedded'
import { createSql } from '../db/client'
import { loadConfig } from '../lib/config'
import { request, withDatabase } from './lib/api'

const CHILDREN = 5
const KINDS = 4
const MB = 1024 * 1024
/** Files of 2 MB each, or fewer bytes when the total is small. */
const FILE_MB = 2
const SHARED_GROWTH = path.join(__dirname, '..', '..', 'shared', 'growth')

const quiet = { info: () => {}, debug: () => {}, warn: (message: string) => console.error(message) }

/** An app on a new scratch database of the server, listening on loopback. */
async function serve (serverUrl: string, admin: ReturnType<typeof createSql>): Promise<{ app: App, origin: string, drop: () => Promise<void> }> {
  const name = `bench_import_${randomBytes(4).toString('hex')}`
  await admin.unsafe(`create database ${name}`)
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'child-health-bench-'))
  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'error',
    DATA_DIR: dataDir,
    DATABASE_URL: withDatabase(serverUrl, name),
    REGISTRATION: 'open',
    BCRYPT_COST: '10',
    JWT_SECRET: randomBytes(32).toString('hex'),
    JWT_REFRESH_SECRET: randomBytes(32).toString('hex'),
    // The export holds each child's growth answer when WHO's tables are beside the project.
    GROWTH_DATA_DIR: existsSync(SHARED_GROWTH) ? SHARED_GROWTH : path.join(dataDir, 'growth'),
    GROWTH_DATA_URL: 'http://127.0.0.1:1/'
  })
  const app = await buildApp(config)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  return {
    app,
    origin,
    drop: async () => {
      await app.close()
      await admin.unsafe(`drop database if exists ${name} with (force)`)
      rmSync(dataDir, { recursive: true, force: true })
    }
  }
}

/** Five children with `records` records in all, and `filesMb` of PDF attachments spread over them. */
async function seed (app: App, origin: string, records: number, filesMb: number): Promise<{ token: string, familyId: number }> {
  const pair = await request(origin, 'POST', '/api/auth/register', null, { email: 'bench@example.org', password: 'bench password 1', name: 'Bench' })
  const token = pair.accessToken as string
  const familyId = (await request(origin, 'GET', '/api/me', token)).families[0].id as number
  const perKind = Math.max(1, Math.round(records / (CHILDREN * KINDS)))
  const files = Math.max(1, Math.round(filesMb / FILE_MB))
  const fileBytes = Math.round(filesMb * MB / files)
  const note = 'Seen at the clinic; all well. '.repeat(4)
  const sql = app.sql
  for (let c = 0; c < CHILDREN; c++) {
    const child = await request(origin, 'POST', '/api/children', token, { name: `Child ${c + 1}`, dateOfBirth: '2019-01-01', sex: c % 2 === 0 ? 'female' : 'male' })
    await sql`insert into visits (child_id, date, type, provider, notes) select ${child.id}, date '2019-01-01' + (i * 7) % 2000, 'wellness', 'Dr. Osei', ${note} from generate_series(1, ${perKind}) i`
    await sql`insert into measurements (child_id, measured_at, height_cm, weight_kg, head_circumference_cm, notes) select ${child.id}, date '2019-01-01' + (i * 7) % 2000, 50 + (i % 286) * 0.4, 3.5 + (i % 286) * 0.1, 35 + (i % 286) * 0.05, ${note} from generate_series(1, ${perKind}) i`
    await sql`insert into medical_events (child_id, date, type, name, description) select ${child.id}, date '2019-01-01' + (i * 7) % 2000, (array['vaccine', 'procedure', 'medication'])[1 + i % 3], 'MMR', ${note} from generate_series(1, ${perKind}) i`
    await sql`insert into illnesses (child_id, start_date, end_date, diagnosis, temperature_c, notes) select ${child.id}, date '2019-01-01' + (i * 7) % 2000, date '2019-01-03' + (i * 7) % 2000, 'Cold', 38.5, ${note} from generate_series(1, ${perKind}) i`
  }
  const children = await sql<{ id: number }[]>`select id from children where family_id = ${familyId} order by id`
  mkdirSync(app.config.uploadDir, { recursive: true })
  for (let f = 0; f < files; f++) {
    const storedName = `${randomBytes(16).toString('hex')}.pdf`
    writeFileSync(path.join(app.config.uploadDir, storedName), Buffer.concat([Buffer.from('%PDF-1.4\n'), randomBytes(fileBytes - 9)]))
    await sql`
      insert into attachments (child_id, file_name, stored_name, content_type, size_bytes)
      values (${children[f % CHILDREN].id}, ${`scan ${f + 1}.pdf`}, ${storedName}, 'application/pdf', ${fileBytes})
    `
  }
  return { token, familyId }
}

function download (origin: string, url: string, token: string, file: string): Promise<void> {
  return new Promise((resolve, reject) => {
    http.get(`${origin}${url}`, { headers: { authorization: `Bearer ${token}` } }, res => {
      if (res.statusCode !== 200) return reject(new Error(`export answered ${res.statusCode}`))
      pipeline(res, createWriteStream(file)).then(resolve, reject)
    }).on('error', reject)
  })
}

/** Sends the archive as a multipart body streamed from disk, as a browser or curl would. */
function uploadArchive (origin: string, token: string, archive: string): Promise<{ status: number, body: string }> {
  const boundary = `----bench${randomBytes(8).toString('hex')}`
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="family.zip"\r\nContent-Type: application/zip\r\n\r\n`)
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`)
  return new Promise((resolve, reject) => {
    const req = http.request(`${origin}/api/families/import`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-length': head.length + statSync(archive).size + tail.length
      }
    }, res => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', chunk => { body += chunk })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.write(head)
    const file = createReadStream(archive)
    file.on('error', reject)
    file.on('end', () => req.end(tail))
    file.pipe(req, { end: false })
  })
}

interface Result {
  seconds: number
  baselineRssMb: number
  peakRssMb: number
  peakHeapMb: number
  counts: Record<string, number>
}

/** In a process of its own: a fresh database, and the archive imported over HTTP. */
async function importScenario (serverUrl: string, archive: string): Promise<Result> {
  const admin = createSql(withDatabase(serverUrl, 'postgres'), { max: 1 })
  const { origin, drop } = await serve(serverUrl, admin)
  try {
    const pair = await request(origin, 'POST', '/api/auth/register', null, { email: 'importer@example.org', password: 'bench password 1', name: 'Importer' })
    const baseline = process.memoryUsage().rss
    let peakRss = baseline
    let peakHeap = process.memoryUsage().heapUsed
    const sampler = setInterval(() => {
      const usage = process.memoryUsage()
      peakRss = Math.max(peakRss, usage.rss)
      peakHeap = Math.max(peakHeap, usage.heapUsed)
    }, 5)
    const start = process.hrtime.bigint()
    const { status, body } = await uploadArchive(origin, pair.accessToken as string, archive)
    const seconds = Number(process.hrtime.bigint() - start) / 1e9
    clearInterval(sampler)
    if (status !== 201) throw new Error(`import answered ${status}: ${body}`)
    const answer = JSON.parse(body) as { counts: Record<string, number> }
    return { seconds, baselineRssMb: baseline / MB, peakRssMb: peakRss / MB, peakHeapMb: peakHeap / MB, counts: answer.counts }
  } finally {
    await drop()
    await admin.end()
  }
}

const fixed = (value: number, digits = 1): string => value.toFixed(digits)

function positive (name: string, fallback: number): number {
  const raw = process.env[name]
  const value = raw === undefined || raw === '' ? fallback : Number(raw)
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, not "${raw}"`)
  return value
}

async function main (): Promise<void> {
  if (process.argv[2] === '--scenario') {
    process.stdout.write(JSON.stringify(await importScenario(process.argv[3], process.argv[4])) + '\n')
    return
  }
  const records = positive('BENCH_RECORDS', 20_000)
  const filesMb = positive('BENCH_FILES_MB', 500)
  const given = process.env.DATABASE_URL
  const dir = mkdtempSync(path.join(os.tmpdir(), 'child-health-bench-import-'))
  // As root, PostgreSQL runs as the postgres user, which must be able to reach its directory.
  chmodSync(dir, 0o755)
  const embedded = given === undefined || given === '' ? await startEmbeddedDatabase(path.join(dir, 'postgres'), quiet) : null
  const serverUrl = embedded?.url ?? (given as string)
  const admin = createSql(withDatabase(serverUrl, 'postgres'), { max: 1 })
  try {
    const archive = path.join(dir, 'family.zip')
    const source = await serve(serverUrl, admin)
    try {
      const { token, familyId } = await seed(source.app, source.origin, records, filesMb)
      const start = process.hrtime.bigint()
      await download(source.origin, `/api/families/${familyId}/export`, token, archive)
      console.log(`exported ${records} records and ${filesMb} MB of files: archive ${fixed(statSync(archive).size / MB)} MB in ${fixed(Number(process.hrtime.bigint() - start) / 1e9, 2)} s`)
    } finally {
      await source.drop()
    }
    const output = execFileSync(process.execPath, ['--import', 'tsx', __filename, '--scenario', serverUrl, archive], { stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 16 * MB })
    const r = JSON.parse(output.toString().trim().split('\n').pop() as string) as Result
    const size = statSync(archive).size / MB
    console.log([
      `imported over HTTP in ${fixed(r.seconds, 2)} s (${fixed(size / r.seconds)} MB/s):`,
      Object.entries(r.counts).map(([key, value]) => `${value} ${key}`).join(', ') + ';',
      `rss ${fixed(r.baselineRssMb)} MB before, peak ${fixed(r.peakRssMb)} MB (+${fixed(r.peakRssMb - r.baselineRssMb)} MB), peak heap ${fixed(r.peakHeapMb)} MB`
    ].join(' '))
  } finally {
    await admin.end()
    await embedded?.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

main().catch(error => {
  console.error(error)
  process.exit(1)
})
