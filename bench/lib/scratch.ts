import { randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { buildApp, type App } from '../../app'
import { createSql } from '../../db/client'
import { startEmbeddedDatabase } from '../../db/embedded'
import { loadConfig } from '../../io/config'
import { withDatabase } from './api'

/** What the standalone benchmarks (export, import, events) share: the database server they run on, and the app on a scratch database of it. */

const quiet = { info: () => {}, debug: () => {}, warn: (message: string) => console.error(message) }

/** WHO's growth tables beside the project, where the benchmarks find them. */
const SHARED_GROWTH = path.join(__dirname, '..', '..', '..', 'shared', 'growth')

/**
 * Runs `work` on DATABASE_URL's server when it is set, otherwise on an
 * embedded PostgreSQL, with a temporary folder for its files; both are gone
 * at the end.
 */
export async function onServer<T> (work: (serverUrl: string, dir: string) => Promise<T>): Promise<T> {
  const given = process.env.DATABASE_URL
  const dir = mkdtempSync(path.join(os.tmpdir(), 'child-health-bench-db-'))
  // As root, PostgreSQL runs as the postgres user, which must be able to reach its directory.
  chmodSync(dir, 0o755)
  try {
    const embedded = given === undefined || given === '' ? await startEmbeddedDatabase(path.join(dir, 'postgres'), quiet) : null
    try {
      return await work(embedded?.url ?? (given as string), dir)
    } finally {
      await embedded?.stop()
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * The app in this process on a new scratch database of the server, listening
 * on loopback, with `env` over the settings of a benchmark; `drop` closes it
 * and removes its database and files.
 */
export async function scratchApp (serverUrl: string, label: string, env: Record<string, string>): Promise<{ app: App, origin: string, drop: () => Promise<void> }> {
  const name = `bench_${label}_${randomBytes(4).toString('hex')}`
  const admin = createSql(withDatabase(serverUrl, 'postgres'), { max: 1 })
  await admin.unsafe(`create database ${name}`)
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'child-health-bench-'))
  const drop = async (): Promise<void> => {
    await app.close()
    await admin.unsafe(`drop database if exists ${name} with (force)`)
    await admin.end()
    rmSync(dataDir, { recursive: true, force: true })
  }
  const app = await buildApp(loadConfig({
    NODE_ENV: 'test',
    DATA_DIR: dataDir,
    DATABASE_URL: withDatabase(serverUrl, name),
    REGISTRATION: 'open',
    BCRYPT_COST: '10',
    JWT_SECRET: randomBytes(32).toString('hex'),
    JWT_REFRESH_SECRET: randomBytes(32).toString('hex'),
    // The exports hold each child's growth answer when WHO's tables are beside the project.
    GROWTH_DATA_DIR: existsSync(SHARED_GROWTH) ? SHARED_GROWTH : path.join(dataDir, 'growth'),
    ...env
  }))
  try {
    await app.listen({ port: 0, host: '127.0.0.1' })
  } catch (error) {
    await drop()
    throw error
  }
  return { app, origin: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, drop }
}

const MB = 1024 * 1024

/** This process's memory: the rss at the baseline, and the highest rss and heap since. */
export interface MemoryPeaks {
  baselineRssMb: number
  peakRssMb: number
  peakHeapMb: number
}

/** Samples this process's memory every 5 ms from a baseline taken now, or again at `mark`. */
export function sampleMemory (): { mark: () => void, peaks: () => MemoryPeaks, stop: () => void } {
  let baseline = 0
  let peakRss = 0
  let peakHeap = 0
  const mark = (): void => {
    baseline = peakRss = process.memoryUsage().rss
    peakHeap = process.memoryUsage().heapUsed
  }
  mark()
  const sampler = setInterval(() => {
    const usage = process.memoryUsage()
    peakRss = Math.max(peakRss, usage.rss)
    peakHeap = Math.max(peakHeap, usage.heapUsed)
  }, 5)
  return {
    mark,
    peaks: () => ({ baselineRssMb: baseline / MB, peakRssMb: peakRss / MB, peakHeapMb: peakHeap / MB }),
    stop: () => clearInterval(sampler)
  }
}
