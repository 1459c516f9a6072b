import { writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { Figures } from './load'
import type { ServiceMemory } from './memory'
import type { FloodReport } from './password-flood'
import type { Counts } from './seed'
import { settings } from './settings'
import type { StartReport } from './start'
import type { StallCounts } from './stalls'
import { pad, type Target } from './target'

export type { Target } from './target'

export interface Row {
  key: string
  scenario: string
  figures: Figures
  /** The statuses the scenario expects, when not 2xx. */
  expected?: number[]
}

/** The service's cache of answers after the run, from the admin statistics. */
export interface CacheReport {
  maxBytes: number
  bytes: number
  entries: number
  hits: number
  misses: number
}

export interface Ratios {
  listToReadFloor: number
  listToMemoryFloor: number
  createToWriteFloor: number
  /** The write floor with change tracking against without: what recording each change costs. */
  trackedToUntrackedWriteFloor: number
  notModifiedToMemoryFloor: number
  missesToReadFloor: number
  growthToGrowthMisses: number
  cdcGrowthToGrowthMisses: number
  p99UnderLoginLoad: number
  p99WhileExportsStall: number
}

/** What the stalling clients did during the measured run of the reads alongside them. */
export interface StallReport {
  families: number[]
  files: { perFamily: number, megabytesEach: number }
  counts: StallCounts
}

const ratio = (a: number, b: number): number => b === 0 ? 0 : Number((a / b).toFixed(3))
const percent = (value: number): string => `${(value * 100).toFixed(1)}%`

export function ratios (byKey: Map<string, Figures>): Ratios {
  const get = (key: string): Figures => byKey.get(key) as Figures
  return {
    listToReadFloor: ratio(get('measurements').requestsPerSecond, get('readFloor').requestsPerSecond),
    listToMemoryFloor: ratio(get('measurements').requestsPerSecond, get('memoryFloor').requestsPerSecond),
    createToWriteFloor: ratio(get('create').requestsPerSecond, get('writeFloor').requestsPerSecond),
    trackedToUntrackedWriteFloor: ratio(get('writeFloor').requestsPerSecond, get('untrackedWriteFloor').requestsPerSecond),
    notModifiedToMemoryFloor: ratio(get('notModified').requestsPerSecond, get('memoryFloor').requestsPerSecond),
    missesToReadFloor: ratio(get('listMisses').requestsPerSecond, get('readFloor').requestsPerSecond),
    growthToGrowthMisses: byKey.has('growth') ? ratio(get('growth').requestsPerSecond, get('growthMisses').requestsPerSecond) : 0,
    cdcGrowthToGrowthMisses: byKey.has('growthCdc') ? ratio(get('growthCdc').requestsPerSecond, get('growthCdcMisses').requestsPerSecond) : 0,
    p99UnderLoginLoad: ratio(get('measurementsUnderLogin').p99Ms, get('measurements').p99Ms),
    p99WhileExportsStall: ratio(get('measurementsWhileExportsStall').p99Ms, get('measurements').p99Ms)
  }
}

/** What the issue of reads at the machine's ceiling asked: each a ratio of the same run. */
function ceilingTargets (r: Ratios, rows: Row[], cache: CacheReport | null): Target[] {
  const growth = rows.find(row => row.key === 'growth')
  const growthMisses = rows.find(row => row.key === 'growthMisses')
  const cdc = rows.find(row => row.key === 'growthCdc')
  const cdcMisses = rows.find(row => row.key === 'growthCdcMisses')
  return [
    { target: 'measurements list (100 rows), warm: ≥ 45% of the in-memory floor (req/s)', figure: percent(r.listToMemoryFloor), met: r.listToMemoryFloor >= 0.45 },
    { target: 'measurements list (100 rows), warm: ≥ 2 × the database read floor (req/s)', figure: `${r.listToReadFloor.toFixed(2)} ×`, met: r.listToReadFloor >= 2 },
    { target: 'the same list answered 304 with If-None-Match: ≥ 60% of the in-memory floor (req/s)', figure: percent(r.notModifiedToMemoryFloor), met: r.notModifiedToMemoryFloor >= 0.6 },
    { target: 'a list read that misses the cache: ≥ 85% of the database read floor (req/s)', figure: percent(r.missesToReadFloor), met: r.missesToReadFloor >= 0.85 },
    { target: 'create a measurement with its change record: ≥ 55% of the database write floor (req/s)', figure: percent(r.createToWriteFloor), met: r.createToWriteFloor >= 0.55 },
    {
      target: 'growth of a child (200 measurements): ≥ 3 × the same growth scored afresh each request (req/s)',
      figure: growth === undefined ? 'skipped: no WHO tables' : `${r.growthToGrowthMisses.toFixed(2)} × (${growth.figures.requestsPerSecond} req/s)`,
      met: growth === undefined ? null : r.growthToGrowthMisses >= 3
    },
    {
      target: 'growth on CDC\'s charts: ≥ 3 × the same growth scored afresh each request (req/s), beside WHO\'s',
      figure: cdc === undefined
        ? 'not run'
        : `${r.cdcGrowthToGrowthMisses.toFixed(2)} × (${cdc.figures.requestsPerSecond} req/s; scored afresh ${cdcMisses?.figures.requestsPerSecond ?? '?'} req/s against WHO's ${growthMisses?.figures.requestsPerSecond ?? 'skipped'})`,
      met: cdc === undefined ? null : r.cdcGrowthToGrowthMisses >= 3
    },
    {
      target: 'the cache of answers stays within RESPONSE_CACHE_MB',
      figure: cache === null ? 'not read' : `${(cache.bytes / 2 ** 20).toFixed(1)} MB of ${(cache.maxBytes / 2 ** 20).toFixed(0)} MB, ${cache.entries} answers, ${cache.hits} hits, ${cache.misses} misses`,
      met: cache === null ? false : cache.bytes <= cache.maxBytes
    }
  ]
}

/** The pairs of the large-data part: each large scenario and the small one it is compared with. */
export const LARGE_PAIRS: Array<{ large: string, small: string, what: string }> = [
  { large: 'largeList', small: 'measurements', what: 'measurements list, first 100 rows of the child with 50,000 (small: of a child with 200)' },
  { large: 'largeChild', small: 'child', what: 'read one child' },
  { large: 'largeVisits', small: 'visits', what: 'visits, type filter and sort' },
  { large: 'largeStats', small: 'stats', what: 'admin statistics' },
  { large: 'largeCreate', small: 'create', what: 'create a measurement' }
]

export interface GrowthCost { points: number, ms: number, msPerPoint: number }

/** The same speed at a hundred times the data: large against small req/s, ≥ 0.8 each; the rest reported. */
export function largeTargets (byKey: Map<string, Figures>, growth: { small: GrowthCost, large: GrowthCost } | null): Target[] {
  const list: Target[] = []
  for (const { large, small, what } of LARGE_PAIRS) {
    const a = byKey.get(large)
    const b = byKey.get(small)
    if (a === undefined || b === undefined) continue
    const r = ratio(a.requestsPerSecond, b.requestsPerSecond)
    list.push({
      target: `largeToSmall, ${what}: ≥ 0.8 (req/s)`,
      figure: `${r.toFixed(2)} (${a.requestsPerSecond} against ${b.requestsPerSecond} req/s; p99 ${a.p99Ms} against ${b.p99Ms} ms)`,
      met: r >= 0.8
    })
  }
  const floor = byKey.get('largeWriteFloor')
  const smallFloor = byKey.get('writeFloor')
  if (floor !== undefined && smallFloor !== undefined) {
    list.push({ target: 'the database write floor, large against small (what the database itself gives up)', figure: `${ratio(floor.requestsPerSecond, smallFloor.requestsPerSecond).toFixed(2)} (${floor.requestsPerSecond} against ${smallFloor.requestsPerSecond} req/s)`, met: null })
  }
  const offset = byKey.get('largeOffset')
  if (offset !== undefined) list.push({ target: 'a page at offset 10,000 of the child with 50,000 measurements', figure: `${offset.requestsPerSecond} req/s, p99 ${offset.p99Ms} ms`, met: null })
  const misses = byKey.get('largeListMisses')
  const smallMisses = byKey.get('listMisses')
  if (misses !== undefined && smallMisses !== undefined) {
    list.push({ target: 'the first page of the child with 50,000 measurements, each request a cache miss (small: a child with 200)', figure: `${misses.requestsPerSecond} against ${smallMisses.requestsPerSecond} req/s (${ratio(misses.requestsPerSecond, smallMisses.requestsPerSecond).toFixed(2)}), p99 ${misses.p99Ms} against ${smallMisses.p99Ms} ms`, met: null })
  }
  if (growth !== null) {
    list.push({ target: 'growth scored afresh, time per returned point', figure: `${growth.large.msPerPoint} ms a point for ${growth.large.points} points (${growth.large.ms} ms); ${growth.small.msPerPoint} ms a point for ${growth.small.points} points (${growth.small.ms} ms)`, met: null })
  }
  return list
}

export function targets (r: Ratios, rows: Row[], cache: CacheReport | null = null): Target[] {
  const failing = rows.filter(row => row.figures.errors > 0 ||
    (row.expected === undefined ? row.figures.non2xx > 0 : Object.keys(row.figures.statusCodes).some(code => !(row.expected as number[]).includes(Number(code)))))
  return [
    ...ceilingTargets(r, rows, cache),

    { target: 'measurements list p99 under 8 login connections ≤ 3 × alone', figure: `${r.p99UnderLoginLoad.toFixed(2)} ×`, met: r.p99UnderLoginLoad <= 3 },
    {
      target: `measurements list p99 while ${settings.stalledExports} exports stall and ${settings.slowlorisConnections} slowloris connections trickle < 10 × alone`,
      figure: `${r.p99WhileExportsStall.toFixed(2)} ×`,
      met: r.p99WhileExportsStall < 10
    },
    {
      target: 'no unexpected status (non-2xx, 304 where a 304 is the point) and no error in any scenario',
      figure: failing.length === 0 ? 'none' : failing.map(row => `${row.scenario}: ${row.figures.non2xx} non-2xx, ${row.figures.errors} errors`).join('; '),
      met: failing.length === 0
    }
  ]
}


export function table (rows: Row[]): string {
  const width = Math.max(...rows.map(row => row.scenario.length), 8)
  const header = `${pad('scenario', width)}  ${pad('req/s', 9, true)}  ${pad('p50 ms', 8, true)}  ${pad('p99 ms', 8, true)}  ${pad('non-2xx', 7, true)}  ${pad('errors', 6, true)}`
  const lines = rows.map(({ scenario, figures: f }) =>
    `${pad(scenario, width)}  ${pad(f.requestsPerSecond.toFixed(1), 9, true)}  ${pad(f.p50Ms.toFixed(2), 8, true)}  ${pad(f.p99Ms.toFixed(2), 8, true)}  ${pad(String(f.non2xx), 7, true)}  ${pad(String(f.errors), 6, true)}`)
  return [header, '-'.repeat(header.length), ...lines].join('\n')
}

export function targetLines (list: Target[]): string {
  return list.map(t => `${t.met === null ? 'REPORTED' : t.met ? 'MET     ' : 'NOT MET '}  ${t.target}: ${t.figure}`).join('\n')
}

export function machine (): Record<string, unknown> {
  return { cpus: os.availableParallelism(), cpuModel: os.cpus()[0]?.model ?? 'unknown', memoryGiB: Math.round(os.totalmem() / 2 ** 30), node: process.version, platform: `${os.platform()} ${os.release()}` }
}

export function writeResults (file: string, content: { counts: Counts, rows: Row[], ratios: Ratios, targets: Target[], stalls: StallReport | null, cache: CacheReport | null, passwordFlood: FloodReport, shares: unknown, batch: object | null, start: StartReport, memory: ServiceMemory, notes: string[] }): void {
  const results = {
    finishedAt: new Date().toISOString(),
    machine: machine(),
    settings: {
      connections: settings.connections,
      loginLoadConnections: settings.loginLoadConnections,
      warmupSeconds: settings.warmupSeconds,
      durationSeconds: settings.durationSeconds,
      bcryptCost: settings.bcryptCost,
      listLimit: settings.listLimit,
      stalledExports: settings.stalledExports,
      slowlorisConnections: settings.slowlorisConnections
    },
    data: content.counts,
    scenarios: content.rows.map(row => ({ key: row.key, scenario: row.scenario, ...row.figures })),
    ratios: content.ratios,
    targets: content.targets,
    stalls: content.stalls,
    responseCache: content.cache,
    passwordFlood: content.passwordFlood,
    shares: content.shares,
    batch: content.batch,
    start: content.start,
    memory: content.memory,
    notes: content.notes
  }
  writeFileSync(file, JSON.stringify(results, null, 2) + '\n')
}

export const RESULTS_FILE = path.join(__dirname, '..', 'results.json')
