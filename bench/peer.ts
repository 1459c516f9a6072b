import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { onCleanup, runBenchmark } from './lib/cleanup'
import { measure, type Figures } from './lib/load'
import { IDLE_MS, idleRss, peakDuring } from './lib/memory'
import { freshDatabases, peerServer, settle } from './lib/peer/databases'
import { createLoad, listLoad } from './lib/peer/loads'
import { servicePeer, trajectoryBackend, trajectoryPeer, type Peer, type Started } from './lib/peer/peers'
import { CHILDREN, MEASUREMENTS, seedData, seedThroughApi } from './lib/peer/seed'
import { median, peerTable, type PeerFigures } from './lib/peer/table'
import { machine } from './lib/report'
import { settings } from './lib/settings'

/** Fresh starts of each peer on its migrated database. */
const STARTS = 3
/** Runs of the list load of each peer, taking turns (A B A B), so that the machine's noise shows. */
const LIST_RUNS = 2

const seconds = (since: number): number => Math.round((performance.now() - since) / 1000)

/**
 * The service and Trajectory v0.6.0 side by side, on one machine in one run:
 * production builds on the machine's PostgreSQL (a fresh database each), the
 * same seed through each one's API, then their starts, memory, and the
 * 100-row measurements list and a measurement's creation under autocannon.
 */
async function main (): Promise<void> {
  const began = performance.now()
  const backend = trajectoryBackend()
  const m = machine()
  console.log(`Side by side with Trajectory on ${m.cpus} CPUs (${m.cpuModel}), Node ${m.node}, load average ${os.loadavg().map(x => x.toFixed(1)).join(' ')}`)
  console.log(`Trajectory's backend: ${backend}`)
  const dir = mkdtempSync(path.join(os.tmpdir(), 'child-health-bench-peer-'))
  onCleanup('removing the temporary directory', async () => rmSync(dir, { recursive: true, force: true }))
  const [serviceDb, trajectoryDb] = await freshDatabases(peerServer(), ['service', 'trajectory'])
  console.log(`Databases: ${new URL(serviceDb).pathname.slice(1)}, ${new URL(trajectoryDb).pathname.slice(1)} on ${new URL(serviceDb).host}`)
  const peers: Array<{ key: string, peer: Peer }> = [
    { key: 'service', peer: servicePeer(serviceDb, dir) },
    { key: 'trajectory', peer: trajectoryPeer(backend, trajectoryDb, dir) }
  ]

  // A first start of each migrates its database; it is not counted.
  for (const { key, peer } of peers) await (await peer.start(`${key}-migrate`)).stop()

  const starts = peers.map(() => [] as number[])
  let idle: number[] = []
  console.log(`Starting each ${STARTS} times, in turns, on its migrated database, idle ${IDLE_MS / 1000} s the first time ...`)
  for (let round = 0; round < STARTS; round++) {
    const up: Started[] = []
    try {
      for (const [index, { key, peer }] of peers.entries()) {
        const started = await peer.start(`${key}-start-${round + 1}`)
        up.push(started)
        starts[index].push(started.startMs)
      }
      if (round === 0) idle = await idleRss(up.map(started => started.pid))
    } finally {
      await Promise.all(up.map(started => started.stop()))
    }
    console.log(`  start ${round + 1}: ${peers.map(({ peer }, index) => `${peer.label} ${up[index].startMs} ms`).join(', ')}`)
  }

  const data = seedData()
  const running: Started[] = []
  const ids: number[][] = []
  for (const { key, peer } of peers) {
    const started = await peer.start(key)
    running.push(started)
    const seeding = performance.now()
    ids.push(await seedThroughApi(peer, started.url, data))
    console.log(`Seeded ${peer.label} through its API: 1 user, ${CHILDREN} children, ${CHILDREN * MEASUREMENTS} measurements in ${seconds(seeding)} s`)
  }
  await settle(serviceDb)
  await settle(trajectoryDb)
  const seeded = await idleRss(running.map(started => started.pid))

  const lists = peers.map(() => [] as Figures[])
  const peaks = peers.map(() => 0)
  console.log(`List load: ${settings.connections} connections, ${settings.warmupSeconds} s warm-up dropped, ${settings.durationSeconds} s measured, ${LIST_RUNS} runs each in turns ...`)
  for (let run = 0; run < LIST_RUNS; run++) {
    for (const [index, { peer }] of peers.entries()) {
      const { url, pid } = running[index]
      const token = await peer.login(url)
      const peak = await peakDuring(pid, async () => { lists[index].push(await measure(listLoad(url, token, ids[index]))) })
      peaks[index] = Math.max(peaks[index], peak.peakMb)
      const figures = lists[index][run]
      console.log(`  ${peer.label}: ${figures.requestsPerSecond} req/s, p99 ${figures.p99Ms} ms, peak ${peak.peakMb} MB, statuses ${JSON.stringify(figures.statusCodes)}`)
    }
  }
  const creates: Figures[] = []
  console.log('Create load ...')
  for (const [index, { peer }] of peers.entries()) {
    const { url } = running[index]
    creates.push(await measure(createLoad(peer, url, await peer.login(url), ids[index])))
    console.log(`  ${peer.label}: ${creates[index].requestsPerSecond} req/s, p99 ${creates[index].p99Ms} ms, statuses ${JSON.stringify(creates[index].statusCodes)}`)
  }

  const figures: PeerFigures[] = peers.map(({ peer }, index) => ({
    label: peer.label,
    startsMs: starts[index],
    medianStartMs: median(starts[index]),
    idleRssMb: idle[index],
    seededRssMb: seeded[index],
    peakRssMb: peaks[index],
    lists: lists[index],
    create: creates[index]
  }))
  console.log(`\n${peerTable(figures[0], figures[1])}\n`)
  const results = { finishedAt: new Date().toISOString(), machine: m, loadAverage: os.loadavg(), settings: { connections: settings.connections, warmupSeconds: settings.warmupSeconds, durationSeconds: settings.durationSeconds, children: CHILDREN, measurementsPerChild: MEASUREMENTS }, service: figures[0], trajectory: figures[1] }
  console.log(`JSON ${JSON.stringify(results)}`)
  console.log(`\nIn ${seconds(began)} s, load average ${os.loadavg().map(x => x.toFixed(1)).join(' ')}`)
}

runBenchmark(main)
