import { runBenchmark } from './lib/cleanup'
import { startDatabase } from './lib/database'
import { machine, targetLines } from './lib/report'
import { startService } from './lib/service'
import { startAndIdle, startTable, startTargets } from './lib/start'

/**
 * The start and the idle memory of `npm run bench` alone, for a quick look:
 * the built service, bare Fastify and node alone, each started afresh on an
 * embedded PostgreSQL of its own, without seeding and without load.
 */
async function main (): Promise<void> {
  const started = Date.now()
  const m = machine()
  console.log(`Start and idle memory on ${m.cpus} CPUs (${m.cpuModel}), Node ${m.node}`)
  const db = await startDatabase()
  // A first start migrates the database, as the bench's own service does; it is not counted.
  const first = await startService(db.url, db.dir)
  await first.stop()
  const report = await startAndIdle(db.url, db.dir)
  console.log(`\n${startTable(report, null)}\n`)
  console.log(targetLines(startTargets(report, null)))
  console.log(`\nIn ${Math.round((Date.now() - started) / 1000)} s`)
}

runBenchmark(main)
