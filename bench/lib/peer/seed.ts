import { inBatches } from '../accounts'
import { call, type ChildInput, type MeasurementInput, type Peer } from './peers'

/** The seed both peers get: CHILDREN children of one user, MEASUREMENTS measurements each. */
export const CHILDREN = 100
export const MEASUREMENTS = 100
/** Requests in flight at once while seeding. */
const SEED_WIDTH = 8

/** A small fixed-seed generator (mulberry32), so that every run gives both peers the same values. */
function generator (seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const DAY_MS = 86_400_000
const isoDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10)
const round = (value: number, places: number): number => Number(value.toFixed(places))

export interface SeedData {
  children: Array<ChildInput & { measurements: MeasurementInput[] }>
}

/**
 * Children born 3 to 11 years ago, each measured MEASUREMENTS times on days
 * spread from birth to yesterday, along a plausible growth curve with some
 * noise; the head circumference until 3 years. Weights have two decimals, as
 * Trajectory keeps them.
 */
export function seedData (): SeedData {
  const random = generator(42)
  const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate())
  const names = ['Ada', 'Ben', 'Chloé', 'Dev', 'Elif', 'Finn', 'Grace', 'Hugo', 'Iris', 'Jonas']
  const children = Array.from({ length: CHILDREN }, (_, i) => {
    const born = today - Math.floor((1100 + random() * 3000)) * DAY_MS
    const days = Math.round((today - DAY_MS - born) / DAY_MS)
    const measurements = Array.from({ length: MEASUREMENTS }, (_, k): MeasurementInput => {
      const day = 1 + Math.floor(k * (days - 1) / (MEASUREMENTS - 1))
      const age = day / 365.25
      const noise = (spread: number): number => 1 - spread + random() * 2 * spread
      return {
        date: isoDay(born + day * DAY_MS),
        heightCm: round((50 + 31 * Math.log(1 + 1.3 * age)) * noise(0.02), 1),
        weightKg: round((3.3 + 6 * Math.log(1 + 1.6 * age) + 0.8 * age) * noise(0.05), 2),
        headCm: age < 3 ? round((34.5 + 8 * Math.log(1 + 2.5 * age)) * noise(0.02), 1) : null
      }
    })
    return { name: `${names[i % names.length]} ${i + 1}`, dateOfBirth: isoDay(born), sex: i % 2 === 0 ? 'female' as const : 'male' as const, measurements }
  })
  return { children }
}

/**
 * The seed through the peer's own API: its one user registered, then each
 * child and its measurements created, SEED_WIDTH requests at a time. Checks
 * that a child's list answers MEASUREMENTS rows. Returns the children's ids.
 */
export async function seedThroughApi (peer: Peer, url: string, data: SeedData): Promise<number[]> {
  const token = await peer.register(url)
  const ids = await inBatches(data.children.length, SEED_WIDTH, index => peer.createChild(url, token, data.children[index]))
  const jobs = data.children.flatMap((child, index) => child.measurements.map(m => ({ childId: ids[index], body: peer.measurementBody(m) })))
  await inBatches(jobs.length, SEED_WIDTH, async index => {
    const job = jobs[index]
    await call(`${url}/api/children/${job.childId}/measurements`, 'POST', token, job.body, 201)
  })
  const rows = peer.rowsOf(await call(`${url}${listPath(ids[0])}`, 'GET', token, undefined, 200))
  if (rows.length !== MEASUREMENTS) throw new Error(`${peer.label}'s list answered ${rows.length} rows, not ${MEASUREMENTS}`)
  return ids
}

/** The list both serve, the first 100 of a child's measurements. */
export function listPath (childId: number): string {
  return `/api/children/${childId}/measurements?limit=100`
}
