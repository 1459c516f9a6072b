/**
 * The family import, under a health probe. A family of 5 children with
 * 20,000 records and 50 MB of attachment files is exported as a ZIP over real
 * HTTP; then a service in a process of its own, on a fresh database, imports
 * two archives over real HTTP while this process asks `GET /api/health` every
 * 100 ms:
 *
 * - hostile: a 255 MB family.json of nested empty arrays under a key no
 *   export writes, with a correct manifest (size and SHA-256), stored
 *   uncompressed;
 * - honest: the exported family.
 *
 * For each it reports the health probe's p50, p99 and max during the import,
 * and how far the service's RSS rose above its level before the request
 * (targets: p99 under 250 ms, RSS rise under 256 MB).
 *
 *   npm run bench:import
 *   BENCH_FILES_MB=500 BENCH_RECORDS=20000 npm run bench:import   (other sizes)
 *   BENCH_HOSTILE_MB=85 npm run bench:import                       (a smaller hostile document)
 *
 * Uses DATABASE_URL's server when set (in scratch databases, dropped at the
 * end), otherwise an embedded PostgreSQL in a temporary directory.
 */
import { spawn } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { createReadStream, createWriteStream, mkdirSync, statSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import path from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createInterface } from 'node:readline'
import yauzl from 'yauzl'
import { ZipFile } from 'yazl'
import type { App } from '../app'
import { request } from './lib/api'
import { onServer, sampleMemory, scratchApp } from './lib/scratch'

const CHILDREN = 5
const KINDS = 4
const MB = 1024 * 1024
/** Files of 2 MB each, or fewer bytes when the total is small. */
const FILE_MB = 2

/** An app on a new scratch database of the server, listening on loopback. */
function serve (serverUrl: string): Promise<{ app: App, origin: string, drop: () => Promise<void> }> {
  return scratchApp(serverUrl, 'import', { LOG_LEVEL: 'error', GROWTH_DATA_URL: 'http://127.0.0.1:1/' })
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

/** The service's side, in a process of its own: serves on a fresh database and answers its memory when asked on stdin. */
async function serveScenario (serverUrl: string): Promise<void> {
  const { origin, drop } = await serve(serverUrl)
  const delay = monitorEventLoopDelay({ resolution: 10 })
  delay.enable()
  const memory = sampleMemory()
  process.stdout.write(`ready ${origin}\n`)
  for await (const line of createInterface({ input: process.stdin })) {
    if (line === 'mark') {
      global.gc?.()
      memory.mark()
      delay.reset()
      process.stdout.write('marked\n')
    } else if (line === 'stats') {
      const loopMaxMs = delay.max / 1e6
      process.stdout.write(JSON.stringify({ ...memory.peaks(), loopMaxMs }) + '\n')
    } else if (line === 'quit') {
      break
    }
  }
  memory.stop()
  await drop()
}

interface Service {
  origin: string
  ask: (line: string) => Promise<string>
  stop: () => Promise<void>
}

/** Starts the service's side and talks to it a line at a time. */
async function startService (serverUrl: string): Promise<Service> {
  const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', __filename, '--serve', serverUrl], { stdio: ['pipe', 'pipe', 'inherit'] })
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]()
  const next = async (): Promise<string> => {
    const { value, done } = await lines.next()
    if (done === true) throw new Error('the service stopped')
    return value as string
  }
  const ready = await next()
  if (!ready.startsWith('ready ')) throw new Error(`the service said ${ready}`)
  return {
    origin: ready.slice('ready '.length),
    ask: async line => {
      child.stdin.write(`${line}\n`)
      return next()
    },
    stop: async () => {
      child.stdin.end('quit\n')
      await new Promise(resolve => child.once('exit', resolve))
    }
  }
}

/** One GET /api/health, timed in milliseconds. */
function probe (origin: string): Promise<number> {
  const start = process.hrtime.bigint()
  return new Promise(resolve => {
    const done = (): void => resolve(Number(process.hrtime.bigint() - start) / 1e6)
    http.get(`${origin}/api/health`, { agent: false }, res => {
      res.resume()
      res.on('end', done)
    }).on('error', done)
  })
}

/** Probes health every `everyMs` until `work` settles; answers the latencies. */
async function probedWhile<T> (origin: string, everyMs: number, work: Promise<T>): Promise<{ result: T, latencies: number[] }> {
  const pending: Array<Promise<number>> = []
  const timer = setInterval(() => pending.push(probe(origin)), everyMs)
  pending.push(probe(origin))
  try {
    const result = await work
    return { result, latencies: await Promise.all(pending) }
  } finally {
    clearInterval(timer)
  }
}

function percentile (values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil(p / 100 * sorted.length) - 1)]
}

/** The schema version of an exported archive, read from its manifest. */
function schemaVersionOf (archive: string): Promise<string> {
  return new Promise((resolve, reject) => {
    yauzl.open(archive, { lazyEntries: true }, (error, zip) => {
      if (error !== null && error !== undefined) return reject(error)
      zip.on('entry', (entry: yauzl.Entry) => {
        if (entry.fileName !== 'manifest.json') return zip.readEntry()
        zip.openReadStream(entry, (err, stream) => {
          if (err !== null && err !== undefined) return reject(err)
          const chunks: Buffer[] = []
          stream.on('data', chunk => chunks.push(chunk))
          stream.on('end', () => {
            zip.close()
            resolve(JSON.parse(Buffer.concat(chunks).toString()).schemaVersion)
          })
        })
      })
      zip.on('end', () => reject(new Error('the archive has no manifest.json')))
      zip.readEntry()
    })
  })
}

/** `{"x":[` then `[],` until `mb` megabytes, then `[]]}`: valid JSON that no export writes, in chunks of 1 MB. */
function * hostileDocument (mb: number): Generator<Buffer> {
  const chunk = Buffer.alloc(MB - (MB % 3), '[],')
  const chunks = Math.floor(mb * MB / chunk.length)
  yield Buffer.from('{"x":[')
  for (let i = 0; i < chunks; i++) yield chunk
  yield Buffer.from('[]]}')
}

/** An archive whose only entry besides the manifest is the hostile document, stored uncompressed, its size and SHA-256 in the manifest. */
async function writeHostileArchive (file: string, schemaVersion: string, mb: number): Promise<void> {
  const hash = createHash('sha256')
  let size = 0
  for (const chunk of hostileDocument(mb)) {
    hash.update(chunk)
    size += chunk.length
  }
  const manifest = { schemaVersion, files: [{ path: 'family.json', size, sha256: hash.digest('hex') }], missingFiles: [] }
  const zip = new ZipFile()
  zip.addBuffer(Buffer.from(JSON.stringify(manifest)), 'manifest.json')
  zip.addReadStream(Readable.from(hostileDocument(mb)), 'family.json', { compress: false, size })
  zip.end()
  await pipeline(zip.outputStream, createWriteStream(file))
}

interface Measured {
  name: string
  archiveMb: number
  status: number
  seconds: number
  answer: string
  latencies: number[]
  baselineRssMb: number
  peakRssMb: number
  peakHeapMb: number
  loopMaxMs: number
  /** How long a change of another family took to reach its feed, each time it was tried during the import. */
  feedLags: number[]
}

/** Where a family's feed ends now: the cursor after its last change. */
async function feedEnd (origin: string, token: string, familyId: number, cursor: string | null = null): Promise<string | null> {
  for (;;) {
    const page = await request(origin, 'GET', `/api/families/${familyId}/changes?limit=1000${cursor === null ? '' : `&since=${cursor}`}`, token)
    cursor = page.meta.nextCursor ?? cursor
    if (page.meta.hasMore !== true) return cursor
  }
}

/**
 * Feed lag while `work` runs: every 200 ms a measurement is created in a
 * family of its own, and its family's feed is read until the change is
 * there. The feed serves only changes older than the oldest transaction still
 * running on the server, so a long write transaction (the import's) shows
 * here as lag. Answers the lags in milliseconds.
 */
async function feedLagWhile (origin: string, token: string, familyId: number, childId: number, work: Promise<unknown>): Promise<number[]> {
  let cursor = await feedEnd(origin, token, familyId)
  let done = false
  const finished = work.then(() => { done = true }, () => { done = true })
  const lags: number[] = []
  while (!done) {
    const created = await request(origin, 'POST', `/api/children/${childId}/measurements`, token, { measuredAt: '2024-06-01', weightKg: 12.5 })
    const start = process.hrtime.bigint()
    for (let seen = false; !seen;) {
      const page = await request(origin, 'GET', `/api/families/${familyId}/changes?limit=1000${cursor === null ? '' : `&since=${cursor}`}`, token)
      seen = (page.data as Array<{ kind: string, id: number }>).some(change => change.kind === 'measurement' && change.id === created.id)
      cursor = page.meta.nextCursor ?? cursor
      if (!seen) await new Promise(resolve => setTimeout(resolve, 20))
    }
    lags.push(Number(process.hrtime.bigint() - start) / 1e6)
    await Promise.race([finished, new Promise(resolve => setTimeout(resolve, 200))])
  }
  return lags
}

interface Watcher { token: string, familyId: number, childId: number }

async function measure (service: Service, token: string, name: string, archive: string, watcher: Watcher): Promise<Measured> {
  if (await service.ask('mark') !== 'marked') throw new Error('the service did not mark its memory')
  const start = process.hrtime.bigint()
  const upload = uploadArchive(service.origin, token, archive)
  const [{ result, latencies }, feedLags] = await Promise.all([
    probedWhile(service.origin, 100, upload),
    feedLagWhile(service.origin, watcher.token, watcher.familyId, watcher.childId, upload)
  ])
  const seconds = Number(process.hrtime.bigint() - start) / 1e9
  const memory = JSON.parse(await service.ask('stats')) as { baselineRssMb: number, peakRssMb: number, peakHeapMb: number, loopMaxMs: number }
  return { name, archiveMb: statSync(archive).size / MB, status: result.status, seconds, answer: result.body.slice(0, 200), latencies, feedLags, ...memory }
}

const HEALTH_P99_TARGET_MS = 250
const RSS_TARGET_MB = 256

function report (m: Measured): string {
  const p99 = percentile(m.latencies, 99)
  const rise = m.peakRssMb - m.baselineRssMb
  const met = (ok: boolean): string => ok ? 'MET' : 'NOT MET'
  return [
    `${m.name}: ${fixed(m.archiveMb)} MB archive answered ${m.status} in ${fixed(m.seconds, 2)} s (${m.answer.replace(/\s+/g, ' ')})`,
    `  health during the import: ${m.latencies.length} probes, p50 ${fixed(percentile(m.latencies, 50))} ms, p99 ${fixed(p99)} ms, max ${fixed(Math.max(...m.latencies))} ms (target p99 < ${HEALTH_P99_TARGET_MS} ms: ${met(p99 < HEALTH_P99_TARGET_MS)}); the service's longest event-loop delay ${fixed(m.loopMaxMs)} ms`,
    `  service RSS ${fixed(m.baselineRssMb)} MB before, peak ${fixed(m.peakRssMb)} MB (+${fixed(rise)} MB; target < ${RSS_TARGET_MB} MB: ${met(rise < RSS_TARGET_MB)}), peak heap ${fixed(m.peakHeapMb)} MB`,
    `  another family's changes feed during the import: ${m.feedLags.length} writes, each served after p50 ${fixed(percentile(m.feedLags, 50))} ms, max ${fixed(Math.max(0, ...m.feedLags))} ms`
  ].join('\n')
}

const fixed = (value: number, digits = 1): string => value.toFixed(digits)

function positive (name: string, fallback: number): number {
  const raw = process.env[name]
  const value = raw === undefined || raw === '' ? fallback : Number(raw)
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, not "${raw}"`)
  return value
}

async function main (): Promise<void> {
  if (process.argv[2] === '--serve') return serveScenario(process.argv[3])
  const records = positive('BENCH_RECORDS', 20_000)
  const filesMb = positive('BENCH_FILES_MB', 50)
  const hostileMb = positive('BENCH_HOSTILE_MB', 255)
  await onServer(async (serverUrl, dir) => {
    const honest = path.join(dir, 'family.zip')
    const source = await serve(serverUrl)
    try {
      const { token, familyId } = await seed(source.app, source.origin, records, filesMb)
      const start = process.hrtime.bigint()
      await download(source.origin, `/api/families/${familyId}/export`, token, honest)
      console.log(`exported ${records} records and ${filesMb} MB of files: archive ${fixed(statSync(honest).size / MB)} MB in ${fixed(Number(process.hrtime.bigint() - start) / 1e9, 2)} s`)
    } finally {
      await source.drop()
    }
    const hostile = path.join(dir, 'hostile.zip')
    await writeHostileArchive(hostile, await schemaVersionOf(honest), hostileMb)
    const service = await startService(serverUrl)
    try {
      const pair = await request(service.origin, 'POST', '/api/auth/register', null, { email: 'importer@example.org', password: 'bench password 1', name: 'Importer' })
      const token = pair.accessToken as string
      // Another user, writing in a family of their own while the imports run.
      const other = await request(service.origin, 'POST', '/api/auth/register', null, { email: 'neighbour@example.org', password: 'bench password 2', name: 'Neighbour' })
      const familyId = JSON.parse(Buffer.from((other.accessToken as string).split('.')[1], 'base64url').toString()).families[0] as number
      const child = await request(service.origin, 'POST', '/api/children', other.accessToken, { name: 'Noa', dateOfBirth: '2022-01-01', sex: 'female', familyId })
      const watcher: Watcher = { token: other.accessToken, familyId, childId: child.id }
      console.log(report(await measure(service, token, `hostile (${hostileMb} MB family.json)`, hostile, watcher)))
      console.log(report(await measure(service, token, `honest (${records} records, ${filesMb} MB of files)`, honest, watcher)))
    } finally {
      await service.stop()
    }
  })
}

main().catch(error => {
  console.error(error)
  process.exit(1)
})
