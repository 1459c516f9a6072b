import { writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { Figures } from './load'
import type { Counts } from './seed'
import { settings } from './settings'
import type { StallCounts } from './stalls'

export interface Row {
  key: string
  scenario: string
  figures: Figures
}

export interface Target {
  target: string
  figure: string
  met: boolean | null
}

export interface Ratios {
  listToReadFloor: number
  listToMemoryFloor: number
  createToWriteFloor: number
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
    p99UnderLoginLoad: ratio(get('measurementsUnderLogin').p99Ms, get('measurements').p99Ms),
    p99WhileExportsStall: ratio(get('measurementsWhileExportsStall').p99Ms, get('measurements').p99Ms)
  }
}

export function targets (r: Ratios, rows: Row[]): Target[] {
  const failing = rows.filter(row => row.figures.non2xx > 0 || row.figures.errors > 0)
  return [
    { target: 'measurements list ≥ 70% of the database read floor (req/s)', figure: percent(r.listToReadFloor), met: r.listToReadFloor >= 0.7 },
    { target: 'measurements list / in-memory floor (req/s), reported; long-term goal 50%', figure: percent(r.listToMemoryFloor), met: null },
    { target: 'create measurement ≥ 50% of the write floor (req/s)', figure: percent(r.createToWriteFloor), met: r.createToWriteFloor >= 0.5 },
    { target: 'measurements list p99 under 8 login connections ≤ 3 × alone', figure: `${r.p99UnderLoginLoad.toFixed(2)} ×`, met: r.p99UnderLoginLoad <= 3 },
    {
      target: `measurements list p99 while ${settings.stalledExports} exports stall and ${settings.slowlorisConnections} slowloris connections trickle < 10 × alone`,
      figure: `${r.p99WhileExportsStall.toFixed(2)} ×`,
      met: r.p99WhileExportsStall < 10
    },
    {
      target: 'zero non-2xx responses and errors in every scenario',
      figure: failing.length === 0 ? 'none' : failing.map(row => `${row.scenario}: ${row.figures.non2xx} non-2xx, ${row.figures.errors} errors`).join('; '),
      met: failing.length === 0
    }
  ]
}

function pad (text: string, width: number, right = false): string {
  return right ? text.padStart(width) : text.padEnd(width)
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

export function writeResults (file: string, content: { counts: Counts, rows: Row[], ratios: Ratios, targets: Target[], stalls: StallReport | null, notes: string[] }): void {
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
    notes: content.notes
  }
  writeFileSync(file, JSON.stringify(results, null, 2) + '\n')
}

export const RESULTS_FILE = path.join(__dirname, '..', 'results.json')
