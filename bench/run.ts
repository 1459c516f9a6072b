import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { registerParents } from './lib/accounts'
import { cacheReport, call, checkFloors, checkService, checkStallingExport, expectStatus, growthAvailable } from './lib/checks'
import { runBenchmark } from './lib/cleanup'
import { startDatabase } from './lib/database'
import { startFloors } from './lib/floors'
import { fire, measure, type Figures, type Load } from './lib/load'
import { idleRss, peakDuring, type ServiceMemory } from './lib/memory'
import { largeTargets, machine, ratios, RESULTS_FILE, table, targetLines, targets, writeResults, type GrowthCost, type Row, type StallReport } from './lib/report'
import {
  adminStats, createMeasurement, growth, growthMisses, growthPerPoint, listMeasurements, listMisses, listNotModified, listVisits, logIn, measurementsPath,
  oneChildList, readChild, refreshTokens, type World
} from './lib/scenarios'
import { floodLines, floodTargets, passwordFlood, type FloodReport } from './lib/password-flood'
import { growLarge, LARGE, seed, type Counts } from './lib/seed'
import { startService } from './lib/service'
import { settings } from './lib/settings'
import { startAndIdle, startTable, startTargets } from './lib/start'
import { addLargeFiles, stallingFamilies, startStalls, type StallingFamily } from './lib/stalls'
import { createInFamilies, csvImportTime, familiesOf, writeTargets, type CsvImportTime } from './lib/writes'
import { shareLines, shareTargets, shareTimes, type ShareTimes } from './lib/shares'
import { batchAgainstSingles, batchTargets, type BatchTime } from './lib/batch'

/**
 * The benchmark: the built service and three floors against one embedded
 * PostgreSQL, each scenario driven by autocannon, every ratio measured on the
 * same machine in the same run.
 */

const rows: Row[] = []
const notes: string[] = []
let stallReport: StallReport | null = null

async function record (key: string, scenario: string, load: Load, expected?: number[]): Promise<void> {
  process.stdout.write(`  ${scenario} ... `)
  const figures = await measure(load)
  rows.push({ key, scenario, figures, expected })
  process.stdout.write(`${figures.requestsPerSecond} req/s, p99 ${figures.p99Ms} ms\n`)
}

/** Right after the list alone, the list again while 8 connections log in. */
async function underLoginLoad (world: World): Promise<void> {
  const login = fire(logIn(world, settings.loginLoadConnections), settings.warmupSeconds + settings.durationSeconds + 60)
  let list: Figures
  try {
    await fire(listMeasurements(world), settings.warmupSeconds).done
    process.stdout.write('  measurements list, 8 login connections alongside ... ')
    list = await fire(listMeasurements(world), settings.durationSeconds).done
  } finally {
    login.stop()
  }
  const logins = await login.done
  process.stdout.write(`${list.requestsPerSecond} req/s, p99 ${list.p99Ms} ms\n`)
  rows.push({ key: 'measurementsUnderLogin', scenario: 'measurements list, 8 login connections alongside', figures: list })
  rows.push({ key: 'loginAlongside', scenario: '  the 8 login connections alongside', figures: logins })
}

const pause = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms))

const STALL_SCENARIO = 'reads of one family while another stalls exports'

/**
 * The measurements list of every family but the stalling ones, while their
 * owners hold export downloads they never read and slowloris connections
 * trickle their headers in. Both start with the measured run and are closed
 * at its end, whatever happens.
 */
async function whileExportsStall (world: World, stalling: StallingFamily[]): Promise<void> {
  const left = new Set(stalling.map(family => family.familyId))
  const reads = listMeasurements({ ...world, children: world.children.filter(child => !left.has(child.familyId)) })
  const warmup = await fire(reads, settings.warmupSeconds).done
  await pause(Math.min(10_000, warmup.p99Ms + 200))
  process.stdout.write(`  ${STALL_SCENARIO} ... `)
  const stalls = startStalls(world, stalling, (settings.durationSeconds + 60) * 1000)
  let list: Figures
  try {
    list = await fire(reads, settings.durationSeconds).done
  } finally {
    const counts = await stalls.close()
    stallReport = {
      families: stalling.map(family => family.familyId),
      files: { perFamily: settings.stallFilesPerFamily, megabytesEach: settings.stallFileMb },
      counts
    }
  }
  const { exports, slowloris } = stallReport.counts
  process.stdout.write(`${list.requestsPerSecond} req/s, p99 ${list.p99Ms} ms; exports ${exports.status200} × 200, ${exports.status429} × 429; ` +
    `slowloris ${slowloris.connections} open, ${slowloris.cutByService} cut\n`)
  rows.push({ key: 'measurementsWhileExportsStall', scenario: STALL_SCENARIO, figures: list })
}

async function main (): Promise<void> {
  const started = Date.now()
  const m = machine()
  console.log(`Benchmark on ${m.cpus} CPUs (${m.cpuModel}), Node ${m.node}`)
  console.log(`${settings.connections} connections, ${settings.warmupSeconds} s warm-up then ${settings.durationSeconds} s per scenario; BCRYPT_COST=${settings.bcryptCost} for logins (the service's default is 12)`)

  console.log('Starting PostgreSQL, the built service and the floors, and seeding the data ...')
  const db = await startDatabase()
  const service = await startService(db.url, db.dir)
  const start = await startAndIdle(db.url, db.dir)
  const pairs = await registerParents(service.url)
  const admin = pairs.find(pair => pair.user.role === 'admin') as (typeof pairs)[number]
  const { children, counts } = await seed(db.url)
  const world: World = { serviceUrl: service.url, children, tokens: new Map(pairs.map(pair => [pair.user.id, pair.accessToken])) }
  const stalling = stallingFamilies(children)
  const stallBytes = await addLargeFiles(db.url, service.uploadDir, stalling)
  const perFamily = stallBytes / stalling.length
  console.log(`Data: ${Object.entries(counts).map(([name, count]) => `${count} ${name}`).join(', ')}`)
  console.log(`Stalling families ${stalling.map(family => family.familyId).join(', ')}: ${settings.stallFilesPerFamily} more files of ${settings.stallFileMb} MB each`)

  const payload = await checkService(world)
  await checkStallingExport(world, stalling[0], perFamily)
  const payloadFile = path.join(db.dir, 'measurements.json')
  writeFileSync(payloadFile, payload)
  const floors = await startFloors(db.url, payloadFile)
  await checkFloors(world, floors, payload)
  const withGrowth = service.growthTables && await growthAvailable(world)
  if (!withGrowth) notes.push('growth scenario skipped: the service has no WHO reference tables (../shared/growth)')

  // Writers of one family against writers of as many families as connections.
  const families = familiesOf(world, stalling.map(family => family.familyId))
  const csvChild = world.children.find(child => child.familyId === families[1]) as (typeof children)[number]
  let csv: CsvImportTime | null = null
  let shares: ShareTimes | null = null
  let batch: BatchTime | null = null

  const [seededMb] = await idleRss([service.pid])
  console.log('Running:')
  // The service's highest resident memory is read under the first load, the measurements list.
  const memory: ServiceMemory = { seededMb, peak: await peakDuring(service.pid, () => record('measurements', 'measurements list (100 rows), warm', listMeasurements(world))) }
  const steps: Array<() => Promise<void>> = [
    () => record('notModified', 'the same list with If-None-Match: 304', listNotModified(world), [304]),
    () => record('listMisses', 'the same list, each request a cache miss', listMisses(world)),
    () => underLoginLoad(world),
    () => whileExportsStall(world, stalling),
    () => record('memoryFloor', 'in-memory floor: same payload, same schema', listMeasurements(world, floors.memory)),
    () => record('readFloor', 'database read floor: same select', listMeasurements(world, floors.read)),
    () => record('child', 'read one child', readChild(world)),
    () => record('visits', 'visits, type filter and sort', listVisits(world)),
    ...(withGrowth
      ? [
          () => record('growth', 'growth of a child (200 measurements)', growth(world)),
          () => record('growthMisses', 'growth, each request scored afresh', growthMisses(world))
        ]
      : []),
    // CDC's charts ship with the service: no WHO tables needed.
    () => record('growthCdc', 'growth on CDC\'s charts (200 measurements)', growth(world, 'cdc')),
    () => record('growthCdcMisses', 'growth on CDC\'s charts, each request scored afresh', growthMisses(world, 'cdc')),
    () => record('stats', 'admin statistics', adminStats(world, admin.accessToken)),
    () => record('create', 'create a measurement', createMeasurement(world)),
    () => record('createManyFamilies', `create, ${settings.connections} connections over ${settings.connections} families`, createInFamilies(world, families.slice(0, settings.connections))),
    () => record('createOneFamily', `create, ${settings.connections} connections in one family`, createInFamilies(world, families.slice(0, 1))),
    () => record('writeFloor', 'database write floor: same insert', createMeasurement(world, floors.write)),
    () => record('untrackedWriteFloor', 'database write floor, change tracking off', createMeasurement(world, floors.untrackedWrite)),
    () => record('refresh', 'refresh tokens (chained per connection)', refreshTokens(world)),
    () => record('login', 'log in', logIn(world)),
    async () => {
      process.stdout.write('  CSV import of 5,000 lines, 5 times ... ')
      csv = await csvImportTime(world, csvChild)
      process.stdout.write(`median ${csv.medianMs} ms, best ${csv.bestMs} ms\n`)
    },
    async () => {
      process.stdout.write('  share links of a child with 5,000 records, 5 made and 20 manifest requests of each kind ... ')
      shares = await shareTimes(world, db.url, csvChild)
      process.stdout.write(`${shareLines(shares)}\n`)
      process.stdout.write('  500 creates: one batch (atomic, then not) against 500 single requests, one keep-alive connection, 3 times ... ')
      batch = await batchAgainstSingles(world, csvChild)
      process.stdout.write(`batch ${batch.atomic.join(', ')} ms atomic, ${batch.separate.join(', ')} ms not; singles ${batch.singles.join(', ')} ms\n`)
    }
  ]
  for (const step of steps) await step()
  const cache = await cacheReport(world, admin)

  console.log('Password flood: wrong password changes of one account from a process at nice 19, while another user logs in (bcrypt cost 12) ...')
  const flood: FloodReport = await passwordFlood(db.url, db.dir)

  // The same service on a hundred times the data, unless BENCH_LARGE=off.
  let large: Counts | null = null
  let growthCost: { small: GrowthCost, large: GrowthCost } | null = null
  if (process.env.BENCH_LARGE !== 'off') {
    const big = children[0]
    // A child of another family, with the seeded measurements only.
    const small = world.children.find(child => child.familyId !== big.familyId && child.familyId !== csvChild.familyId) as (typeof children)[number]
    const smallGrowth = withGrowth ? await growthPerPoint(world, big) : null
    console.log(`Growing the data to ${LARGE.families} families, ${LARGE.children} children, ${LARGE.measurements} measurements, ${LARGE.visits} visits, one child with ${LARGE.bigChildMeasurements} measurements ...`)
    const grownAt = Date.now()
    large = await growLarge(db.url, big.id)
    console.log(`Data: ${Object.entries(large).map(([name, count]) => `${count} ${name}`).join(', ')} (${Math.round((Date.now() - grownAt) / 1000)} s)`)
    const first = await call(world.serviceUrl + measurementsPath(big.id), { headers: { authorization: `Bearer ${world.tokens.get(big.userId) as string}` } })
    expectStatus('the large list', first, 200)
    const parsed = JSON.parse(first.text) as { data: unknown[], meta: { total: number } }
    if (parsed.data.length !== settings.listLimit || parsed.meta.total !== Number(large.bigChildMeasurements)) {
      throw new Error(`the large list answered ${parsed.data.length} of ${parsed.meta.total} rows, not ${settings.listLimit} of ${large.bigChildMeasurements}`)
    }
    const largeSteps: Array<() => Promise<void>> = [
      () => record('largeList', `large: measurements list, first 100 of ${LARGE.bigChildMeasurements}`, oneChildList(world, big)),
      () => record('largeOffset', 'large: the page at offset 10,000', oneChildList(world, big, 10_000)),
      () => record('largeChild', 'large: read one child', readChild(world)),
      () => record('largeVisits', 'large: visits, type filter and sort', listVisits(world)),
      () => record('largeStats', 'large: admin statistics', adminStats(world, admin.accessToken)),
      () => record('largeCreate', 'large: create a measurement', createMeasurement(world)),
      () => record('largeWriteFloor', 'large: database write floor', createMeasurement(world, floors.write)),
      // Last: each miss fills the cache of answers with an answer no one reads again.
      () => record('largeSmallListMisses', `large: first 100 of a child with ${settings.measurementsPerChild}, each request a cache miss`, oneChildList(world, small, 0, true)),
      () => record('largeListMisses', 'large: the same page, each request a cache miss', oneChildList(world, big, 0, true))
    ]
    for (const step of largeSteps) await step()
    if (smallGrowth !== null) growthCost = { small: smallGrowth, large: await growthPerPoint(world, big, 3) }
  }
  const byKey = new Map(rows.map(row => [row.key, row.figures]))
  const r = ratios(byKey)
  const t = [...targets(r, rows, cache), ...largeTargets(byKey, growthCost), ...writeTargets(byKey, csv), ...shareTargets(shares), ...batchTargets(batch), ...floodTargets(flood), ...startTargets(start, memory)]
  console.log(`\n${table(rows)}\n`)
  console.log(`${startTable(start, memory)}\n`)
  console.log('Ratios (req/s unless said):')
  console.log(`  measurements list / database read floor  ${r.listToReadFloor}`)
  console.log(`  measurements list / in-memory floor      ${r.listToMemoryFloor}`)
  console.log(`  304 / in-memory floor                    ${r.notModifiedToMemoryFloor}`)
  console.log(`  list cache misses / database read floor  ${r.missesToReadFloor}`)
  console.log(`  growth cached / scored afresh            ${r.growthToGrowthMisses}`)
  console.log(`  CDC growth cached / scored afresh        ${r.cdcGrowthToGrowthMisses}`)
  console.log(`  create / database write floor            ${r.createToWriteFloor}`)
  console.log(`  write floor with / without change tracking ${r.trackedToUntrackedWriteFloor}`)
  console.log(`  list p99 with login load / alone         ${r.p99UnderLoginLoad}`)
  console.log(`  list p99 while exports stall / alone     ${r.p99WhileExportsStall}`)
  if (stallReport !== null) {
    const { exports, slowloris } = stallReport.counts
    console.log(`\nAlongside "${STALL_SCENARIO}": ${exports.opened} stalled export downloads by the owners of families ${stallReport.families.join(', ')}: ` +
      `${exports.status200} answered 200, ${exports.status429} answered 429, ${exports.otherStatus} another status, ${exports.noStatus} no status line, ${exports.errors} socket errors; ` +
      `${slowloris.connections} slowloris connections at a time, ${slowloris.opened} opened, ${slowloris.cutByService} cut by the service (${slowloris.answered408} with 408)`)
  }
  console.log(`\n${floodLines(flood)}`)
  console.log(`\nTargets (reads at the machine's ceiling, the earlier benchmark, fair use, a hundred times the data, the password flood, the start and the memory):\n${targetLines(t)}`)
  for (const note of notes) console.log(`Note: ${note}`)
  writeResults(RESULTS_FILE, { counts: large === null ? counts : { ...counts, ...Object.fromEntries(Object.entries(large).map(([key, value]) => [`large.${key}`, value])) }, rows, ratios: r, targets: t, stalls: stallReport, cache, passwordFlood: flood, shares, batch, start, memory, notes })
  console.log(`\nWritten to ${path.relative(process.cwd(), RESULTS_FILE)} in ${Math.round((Date.now() - started) / 1000)} s`)
}


runBenchmark(main)
