import type { Load, Figures } from './load'
import type { Target } from './report'
import type { World } from './scenarios'
import type { SeededChild } from './seed'
import { settings } from './settings'

/**
 * Writes of one family against writes of many: whether a family's writers
 * wait for each other. Each connection creates measurements for the
 * children of one family, the family of connection i being families[i % n].
 */
export function createInFamilies (world: World, families: number[]): Load {
  const body = JSON.stringify({ measuredAt: new Date().toISOString().slice(0, 10), heightCm: 121.4, weightKg: 23.35, notes: 'Measured at home' })
  return {
    url: world.serviceUrl,
    connections: settings.connections,
    requests: connection => {
      const familyId = families[connection % families.length]
      return world.children.filter(child => child.familyId === familyId).map(child => ({
        method: 'POST',
        path: `/api/children/${child.id}/measurements`,
        headers: { authorization: `Bearer ${world.tokens.get(child.userId) as string}`, 'content-type': 'application/json' },
        body
      }))
    }
  }
}

/** The families of the seeded children, in order, but those left out (the stalling ones). */
export function familiesOf (world: World, leftOut: number[]): number[] {
  return [...new Set(world.children.map(child => child.familyId))].filter(id => !leftOut.includes(id))
}

export interface CsvImportTime { lines: number, runs: number[], bestMs: number, medianMs: number }

/** A CSV file of `lines` measurements, dated within the last 300 days: every seeded child was born before. */
function csvOf (lines: number, run: number): string {
  const rows = ['measuredAt,heightCm,weightKg,headCircumferenceCm,notes']
  for (let i = 0; i < lines; i++) {
    const day = new Date(Date.now() - (i % 300) * 86_400_000).toISOString().slice(0, 10)
    rows.push(`${day},${(110 + (i % 50) / 10).toFixed(1)},${(20 + (i % 90) / 100).toFixed(2)},,import ${run} line ${i + 1}`)
  }
  return rows.join('\n') + '\n'
}

/** `POST /api/children/:id/measurements/import` of `lines` lines, `runs` times in a row, each timed from the request to its answer. */
export async function csvImportTime (world: World, child: SeededChild, lines = 5000, runs = 5): Promise<CsvImportTime> {
  const times: number[] = []
  for (let run = 0; run < runs; run++) {
    const body = csvOf(lines, run)
    const start = process.hrtime.bigint()
    const res = await fetch(`${world.serviceUrl}/api/children/${child.id}/measurements/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${world.tokens.get(child.userId) as string}`, 'content-type': 'text/csv' },
      body,
      signal: AbortSignal.timeout(120_000)
    })
    const text = await res.text()
    const ms = Number(process.hrtime.bigint() - start) / 1e6
    if (res.status !== 201) throw new Error(`the CSV import answered ${res.status}: ${text.slice(0, 300)}`)
    times.push(Math.round(ms))
  }
  const sorted = [...times].sort((a, b) => a - b)
  return { lines, runs: times, bestMs: sorted[0], medianMs: sorted[Math.floor(sorted.length / 2)] }
}

const ratio = (a: number, b: number): number => b === 0 ? 0 : Number((a / b).toFixed(3))

/** The target that the requests a second of `a` reach `least` of those of `b`, when both scenarios ran. */
function share (a: Figures | undefined, b: Figures | undefined, least: number, target: string, figure: (r: number, a: Figures, b: Figures) => string): Target[] {
  if (a === undefined || b === undefined) return []
  const r = ratio(a.requestsPerSecond, b.requestsPerSecond)
  return [{ target, figure: figure(r, a, b), met: r >= least }]
}

/** The targets of parallel writes, kept totals and bulk writes, from the same run. */
export function writeTargets (byKey: Map<string, Figures>, csv: CsvImportTime | null): Target[] {
  const many = byKey.get('createManyFamilies')
  const list: Target[] = [
    ...share(byKey.get('createOneFamily'), many, 0.8,
      'create, 32 connections in one family: ≥ 80% of 32 connections over 32 families (req/s)',
      (r, one, many) => `${(r * 100).toFixed(0)}% (${one.requestsPerSecond} against ${many.requestsPerSecond} req/s; p99 ${one.p99Ms} against ${many.p99Ms} ms)`),
    ...share(many, byKey.get('untrackedWriteFloor'), 0.5,
      'create, 32 connections over 32 families: ≥ 50% of the database write floor with change tracking off (req/s)',
      (r, many, untracked) => `${(r * 100).toFixed(0)}% (${many.requestsPerSecond} against ${untracked.requestsPerSecond} req/s)`),
    ...share(byKey.get('largeListMisses'), byKey.get('largeSmallListMisses'), 0.8,
      'the first page of the child with 50,000 measurements, each request a cache miss: ≥ 80% of a child with 200 (req/s)',
      (r, big, small) => `${r.toFixed(2)} (${big.requestsPerSecond} against ${small.requestsPerSecond} req/s; p99 ${big.p99Ms} against ${small.p99Ms} ms)`)
  ]
  if (csv !== null) {
    list.push({
      target: `the ${csv.lines.toLocaleString('en')}-line CSV import of measurements, time to its answer`,
      figure: `median ${csv.medianMs} ms, best ${csv.bestMs} ms (${csv.runs.join(', ')} ms)`,
      met: null
    })
  }
  return list
}
