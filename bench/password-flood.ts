/**
 * The password flood of `npm run bench` on its own, for a quick look:
 * an embedded PostgreSQL, the built service at bcrypt cost 12, and the flood
 * (see bench/README.md).
 *
 *   npm run bench:flood
 */
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { runBenchmark } from './lib/cleanup'
import { startDatabase } from './lib/database'
import { floodLines, floodTargets, passwordFlood } from './lib/password-flood'
import { machine, targetLines } from './lib/report'

const RESULTS = path.join(__dirname, 'flood.json')

async function main (): Promise<void> {
  const m = machine()
  console.log(`Password flood on ${m.cpus} CPUs (${m.cpuModel}), Node ${m.node}`)
  const db = await startDatabase()
  const report = await passwordFlood(db.url, db.dir)
  console.log(floodLines(report))
  const targets = floodTargets(report)
  console.log(targetLines(targets))
  writeFileSync(RESULTS, JSON.stringify({ finishedAt: new Date().toISOString(), machine: m, ...report, targets }, null, 2) + '\n')
  console.log(`Written to ${path.relative(process.cwd(), RESULTS)}`)
}


runBenchmark(main)
