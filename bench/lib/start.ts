import path from 'node:path'
import { freePort } from '../../db/embedded'
import { IDLE_MS, idleRss, type ServiceMemory } from './memory'
import { startProcess, stopProcess, waitForHttp } from './processes'
import { pad, type Target } from './target'
import { baseEnv, ROOT, startService } from './service'

/** How many fresh processes of each kind are started, one after the other. */
export const STARTS = 3

/** How often a starting process's health is asked: the figures are to within this. */
const POLL_MS = 10

/** One kind of process started afresh STARTS times: each start to its first healthy answer, and its VmRSS idle after the first. */
export interface Starts {
  startsMs: number[]
  medianMs: number
  idleRssMb: number
}

export interface StartReport {
  service: Starts
  bareFastify: Starts
  nodeAlone: Starts
}

interface Started {
  pid: number
  startMs: number
  stop: () => Promise<void>
}

/** Node alone: an http server that answers 200 on the health path, the floor of a Node process that listens. */
const NODE_ALONE = "require('node:http').createServer((req, res) => { res.statusCode = req.url === '/api/health' ? 200 : 404; res.end() })" +
  ".listen(Number(process.env.PORT), '127.0.0.1')"

/** A floor spawned as the service is, on a port of its own, timed from the spawn to its first healthy answer. */
async function startFloor (name: string, args: string[]): Promise<Started> {
  const port = await freePort()
  const spawnedAt = performance.now()
  const floor = startProcess(name, args, { ...baseEnv(), NODE_ENV: 'production', PORT: String(port) }, ROOT)
  await waitForHttp(floor, `http://127.0.0.1:${port}/api/health`, 60_000, POLL_MS)
  return { pid: floor.child.pid as number, startMs: Math.round(performance.now() - spawnedAt), stop: () => stopProcess(floor) }
}

/**
 * Starts node alone, the bare Fastify floor and the built service (as the
 * bench starts it, on the run's migrated database) in turns, STARTS rounds,
 * each a fresh process timed from its spawn to its first healthy answer. The
 * three of a round stay up, idle, until the round ends; in the first, the
 * VmRSS of each is read once the last has been idle for IDLE_MS.
 */
export async function startAndIdle (databaseUrl: string, dir: string): Promise<StartReport> {
  const kinds: Array<{ key: keyof StartReport, label: string, start: (run: number) => Promise<Started> }> = [
    { key: 'nodeAlone', label: 'node alone', start: () => startFloor('the node alone floor', ['-e', NODE_ALONE]) },
    { key: 'bareFastify', label: 'bare Fastify', start: () => startFloor('the bare Fastify floor', [path.join('bench', 'floors', 'bare.js')]) },
    { key: 'service', label: 'the service', start: run => startService(databaseUrl, dir, { name: `service-start-${run + 1}`, pollMs: POLL_MS }) }
  ]
  const times = new Map(kinds.map(kind => [kind.key, [] as number[]]))
  let idle: number[] = []
  console.log(`Starting node alone, bare Fastify and the service ${STARTS} times each on the migrated database, idle ${IDLE_MS / 1000} s the first time ...`)
  for (let run = 0; run < STARTS; run++) {
    const up: Started[] = []
    try {
      for (const kind of kinds) {
        const started = await kind.start(run)
        up.push(started)
        times.get(kind.key)?.push(started.startMs)
      }
      if (run === 0) idle = await idleRss(up.map(started => started.pid))
    } finally {
      await Promise.all(up.map(started => started.stop()))
    }
    const said = kinds.map((kind, index) => `${kind.label} ${up[index].startMs} ms${run === 0 ? ` (idle ${idle[index]} MB)` : ''}`)
    console.log(`  start ${run + 1} of ${STARTS}: ${said.join(', ')}`)
  }
  const starts = (key: keyof StartReport): Starts => {
    const startsMs = times.get(key) as number[]
    const idleRssMb = idle[kinds.findIndex(kind => kind.key === key)]
    return { startsMs, medianMs: [...startsMs].sort((a, b) => a - b)[Math.floor(startsMs.length / 2)], idleRssMb }
  }
  return { service: starts('service'), bareFastify: starts('bareFastify'), nodeAlone: starts('nodeAlone') }
}

/** The rows of the start and the memory: the service beside its two floors; the seeded and peak figures with a whole run's `memory`. */
export function startTable (report: StartReport, memory: ServiceMemory | null): string {
  const { service, bareFastify, nodeAlone } = report
  const rows: string[][] = [
    ['start and memory', 'service', 'bare Fastify', 'node alone'],
    [`start to the first healthy answer, median of ${STARTS}`, `${service.medianMs} ms`, `${bareFastify.medianMs} ms`, `${nodeAlone.medianMs} ms`],
    ['  each start', service.startsMs.join(', '), bareFastify.startsMs.join(', '), nodeAlone.startsMs.join(', ')],
    [`RSS idle ${IDLE_MS / 1000} s after start`, `${service.idleRssMb} MB`, `${bareFastify.idleRssMb} MB`, `${nodeAlone.idleRssMb} MB`],
    ...(memory === null
      ? []
      : [
          ['RSS idle once seeded', `${memory.seededMb} MB`, '', ''],
          ['RSS peak under the list load', `${memory.peak.peakMb} MB`, '', '']
        ])
  ]
  const widths = rows[0].map((_, column) => Math.max(...rows.map(row => row[column].length)))
  const lines = rows.map(row => row.map((cell, column) => pad(cell, widths[column], column > 0)).join('  ').trimEnd())
  return [lines[0], '-'.repeat(lines[0].length), ...lines.slice(1)].join('\n')
}

/** The start and the memory as REPORTED lines: no target, each beside its floors. */
export function startTargets (report: StartReport, memory: ServiceMemory | null): Target[] {
  const { service, bareFastify, nodeAlone } = report
  const whole = memory === null ? '' : `; seeded ${memory.seededMb} MB; peak under the list load ${memory.peak.peakMb} MB`
  return [
    {
      target: `start to the first healthy answer (GET /api/health, ${STARTS} fresh processes)`,
      figure: `median ${service.medianMs} ms (${service.startsMs.join(', ')}); bare Fastify ${bareFastify.medianMs} ms; node alone ${nodeAlone.medianMs} ms`,
      met: null
    },
    {
      target: `RSS idle ${IDLE_MS / 1000} s after start`,
      figure: `${service.idleRssMb} MB${whole}; bare Fastify ${bareFastify.idleRssMb} MB; node alone ${nodeAlone.idleRssMb} MB`,
      met: null
    }
  ]
}
