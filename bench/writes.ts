/**
 * Where the time of a write goes: creates over 32 families against the
 * database write floors with and without change tracking, as in `npm run
 * bench`, each with the CPU time it cost per request to the service,
 * PostgreSQL, the floors and the load (from /proc), then the CSV import of
 * 5,000 lines. A short run for these figures alone, on a service, floors and
 * an embedded PostgreSQL of its own. BENCH_ROUNDS (default 2) repeats the
 * creates in turns.
 *
 *   npm run bench:writes
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { registerParents } from './lib/accounts'
import { runBenchmark } from './lib/cleanup'
import { startDatabase } from './lib/database'
import { startFloors } from './lib/floors'
import { fire, type Figures, type Load } from './lib/load'
import { createMeasurement, listMeasurements, type World } from './lib/scenarios'
import { seed } from './lib/seed'
import { startService } from './lib/service'
import { settings } from './lib/settings'
import { stallingFamilies } from './lib/stalls'
import { createInFamilies, csvImportTime, familiesOf } from './lib/writes'

const TICK_US = 10_000

interface Proc { ppid: number, ticks: number, childTicks: number, cmd: string }

function processes (): Map<number, Proc> {
  const all = new Map<number, Proc>()
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0/g, ' ')
      all.set(Number(name), { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]), childTicks: Number(fields[13]) + Number(fields[14]), cmd })
    } catch {
      // The process ended while it was read.
    }
  }
  return all
}

/** CPU ticks by part: PostgreSQL (the postmaster, its processes and those that ended), the service, the floors, this process. */
function cpuTicks (postmaster: number): Map<string, number> {
  const all = processes()
  const parts = new Map<string, number>()
  const add = (part: string, ticks: number): void => { parts.set(part, (parts.get(part) ?? 0) + ticks) }
  for (const [pid, proc] of all) {
    if (pid === postmaster) add('postgres', proc.ticks + proc.childTicks)
    else if (proc.ppid === postmaster) add('postgres', proc.ticks)
    else if (proc.ppid === process.pid && proc.cmd.includes('dist/server.js')) add('service', proc.ticks)
    else if (proc.ppid === process.pid && proc.cmd.includes(path.join('bench', 'floors'))) add('floors', proc.ticks)
    else if (pid === process.pid) add('load', proc.ticks)
  }
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number)
  // user, nice, system, irq, softirq: the machine's busy time, steal left out.
  add('machine', cpu[0] + cpu[1] + cpu[2] + cpu[5] + cpu[6])
  return parts
}

const PARTS = ['service', 'floors', 'postgres', 'load', 'machine']

async function measured (name: string, load: Load, postmaster: number): Promise<Figures> {
  await fire(load, settings.warmupSeconds).done
  await new Promise(resolve => setTimeout(resolve, 500))
  const before = cpuTicks(postmaster)
  const figures = await fire(load, settings.durationSeconds).done
  const after = cpuTicks(postmaster)
  const perRequest = new Map(PARTS.map(part => [part, Math.round(((after.get(part) ?? 0) - (before.get(part) ?? 0)) * TICK_US / Math.max(1, figures.requests))]))
  const line = PARTS.map(part => `${part} ${perRequest.get(part) as number}`).join(', ')
  console.log(`  ${name}: ${figures.requestsPerSecond} req/s, p99 ${figures.p99Ms} ms; CPU µs per request: ${line}`)
  return figures
}

async function main (): Promise<void> {
  if (!existsSync('/proc/stat')) throw new Error('bench:writes reads CPU times from /proc: it runs on Linux')
  const rounds = Number(process.env.BENCH_ROUNDS ?? 2)
  if (!Number.isInteger(rounds) || rounds < 1 || rounds > 20) throw new Error('BENCH_ROUNDS must be a whole number from 1 to 20')
  console.log('Starting PostgreSQL, the built service and the write floors, and seeding the data ...')
  const db = await startDatabase()
  const postmaster = Number(readFileSync(path.join(db.dir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0])
  const service = await startService(db.url, db.dir)
  const pairs = await registerParents(service.url)
  const { children } = await seed(db.url)
  const world: World = { serviceUrl: service.url, children, tokens: new Map(pairs.map(pair => [pair.user.id, pair.accessToken])) }
  const payloadFile = path.join(db.dir, 'measurements.json')
  writeFileSync(payloadFile, '[]')
  const floors = await startFloors(db.url, payloadFile)
  const families = familiesOf(world, stallingFamilies(children).map(family => family.familyId))
  await fire(listMeasurements(world), settings.warmupSeconds).done

  console.log(`${settings.connections} connections, ${settings.warmupSeconds} s warm-up then ${settings.durationSeconds} s each, ${rounds} rounds in turns:`)
  const loads: Array<[string, Load]> = [
    [`create, ${settings.connections} connections over ${settings.connections} families`, createInFamilies(world, families.slice(0, settings.connections))],
    ['database write floor', createMeasurement(world, floors.write)],
    ['database write floor, change tracking off', createMeasurement(world, floors.untrackedWrite)]
  ]
  const runs: Figures[] = []
  for (let round = 0; round < rounds; round++) {
    for (const [name, load] of loads) runs.push(await measured(name, load, postmaster))
  }
  for (let round = 0; round < rounds; round++) {
    const [many, tracked, untracked] = runs.slice(round * 3, round * 3 + 3)
    const ratio = (a: Figures, b: Figures): string => `${Math.round(a.requestsPerSecond / b.requestsPerSecond * 100)}%`
    console.log(`  round ${round + 1}: creates ${ratio(many, untracked)} of the untracked floor, the tracked floor ${ratio(tracked, untracked)} of it`)
  }

  const csvChild = children.find(child => child.familyId === families[1]) as (typeof children)[number]
  console.log('CSV import of 5,000 lines, 5 times ...')
  const csv = await csvImportTime(world, csvChild)
  console.log(`  median ${csv.medianMs} ms, best ${csv.bestMs} ms (${csv.runs.join(', ')} ms)`)
}

runBenchmark(main)
