import type { Figures } from '../load'
import { pad } from '../target'

/** What the side-by-side run measured of one peer. */
export interface PeerFigures {
  label: string
  startsMs: number[]
  medianStartMs: number
  idleRssMb: number
  seededRssMb: number
  /** The highest resident memory over its list runs. */
  peakRssMb: number
  lists: Figures[]
  create: Figures
}

/** The middle value; of two, the higher. */
export const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

/** A load's rate, with what was not a 2xx beside it. */
function rate (figures: Figures): string {
  const bad = figures.non2xx + figures.errors + figures.timeouts
  return `${Math.round(figures.requestsPerSecond)}${bad > 0 ? ` (${bad} not 2xx)` : ''}`
}

function ratio (a: number, b: number): string {
  return b === 0 ? '' : `${(a / b).toFixed(2)}`
}

/**
 * The table of the run: one row a figure, the service, Trajectory, and the
 * service's figure over Trajectory's. Each list run is shown; the ratio is of
 * their medians (of two runs, the higher).
 */
export function peerTable (service: PeerFigures, trajectory: PeerFigures): string {
  const listMedian = (figures: PeerFigures): number => median(figures.lists.map(run => run.requestsPerSecond))
  const lists = (figures: PeerFigures): string => figures.lists.map(rate).join(', ')
  const rows: string[][] = [
    ['', service.label, trajectory.label, 'service / Trajectory'],
    [
      `start to the first healthy answer, median of ${service.startsMs.length} (ms)`,
      `${service.medianStartMs} (${service.startsMs.join(', ')})`,
      `${trajectory.medianStartMs} (${trajectory.startsMs.join(', ')})`,
      ratio(service.medianStartMs, trajectory.medianStartMs)
    ],
    ['RSS idle 5 s after start (MB)', `${service.idleRssMb}`, `${trajectory.idleRssMb}`, ratio(service.idleRssMb, trajectory.idleRssMb)],
    ['RSS idle, seeded (MB)', `${service.seededRssMb}`, `${trajectory.seededRssMb}`, ratio(service.seededRssMb, trajectory.seededRssMb)],
    ['RSS peak under the 32-connection list load (MB)', `${service.peakRssMb}`, `${trajectory.peakRssMb}`, ratio(service.peakRssMb, trajectory.peakRssMb)],
    ['100-row measurement list (req/s, each run)', lists(service), lists(trajectory), ratio(listMedian(service), listMedian(trajectory))],
    ['  its p99 (ms, each run)', service.lists.map(run => run.p99Ms).join(', '), trajectory.lists.map(run => run.p99Ms).join(', '), ''],
    ['create a measurement (req/s)', rate(service.create), rate(trajectory.create), ratio(service.create.requestsPerSecond, trajectory.create.requestsPerSecond)],
    ['  its p99 (ms)', `${service.create.p99Ms}`, `${trajectory.create.p99Ms}`, '']
  ]
  const widths = rows[0].map((_, column) => Math.max(...rows.map(row => row[column].length)))
  const lines = rows.map(row => row.map((cell, column) => pad(cell, widths[column], column > 0)).join('  ').trimEnd())
  return [lines[0], '-'.repeat(lines[0].length), ...lines.slice(1)].join('\n')
}
