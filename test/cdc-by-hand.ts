import { readFileSync } from 'node:fs'
import path from 'node:path'

// CDC's files and method done by hand, apart from lib/growth, for the CDC tests to check the service against.

/** The files as the project ships them. */
export const SHIPPED = path.join(__dirname, '..', 'growth', 'cdc')
export const MONTH = 30.4375

export type Sex = 'male' | 'female'

export interface Lms { l: number; m: number; s: number }

export interface CsvRow extends Lms {
  sex: Sex
  /** Agemos, or Length. */
  key: number
  p3: number
  p50: number
  p97: number
}

/** Every row of one of CDC's files, read by the names of its header. */
export function csvRows (file: string, dir = SHIPPED): CsvRow[] {
  const [header, ...lines] = readFileSync(path.join(dir, file), 'utf8').split('\n').filter(line => line.trim() !== '')
  const names = header.trim().split(',')
  const column = (name: string): number => {
    const index = names.indexOf(name)
    if (index < 0) throw new Error(`${file} has no column ${name}`)
    return index
  }
  const key = names.includes('Agemos') ? column('Agemos') : column('Length')
  return lines.map(line => {
    const cells = line.trim().split(',')
    const number = (index: number): number => Number(cells[index])
    return {
      sex: cells[column('Sex')] === '1' ? 'male' : 'female',
      key: number(key),
      l: number(column('L')),
      m: number(column('M')),
      s: number(column('S')),
      p3: number(column('P3')),
      p50: number(column('P50')),
      p97: number(column('P97'))
    }
  })
}

/** L, M and S at a key, interpolated linearly between the file's two rows around it; null outside the file. */
export function lmsAt (rows: CsvRow[], sex: Sex, key: number): (Lms & { between: boolean }) | null {
  const own = rows.filter(row => row.sex === sex)
  const exact = own.find(row => Math.abs(row.key - key) < 1e-9)
  if (exact !== undefined) return { l: exact.l, m: exact.m, s: exact.s, between: false }
  const index = own.findIndex(row => row.key > key)
  if (index <= 0) return null
  const [a, b] = [own[index - 1], own[index]]
  const share = (key - a.key) / (b.key - a.key)
  return { l: a.l + share * (b.l - a.l), m: a.m + share * (b.m - a.m), s: a.s + share * (b.s - a.s), between: true }
}

export const zOf = (x: number, { l, m, s }: Lms): number => ((x / m) ** l - 1) / (l * s)
export const valueAt = ({ l, m, s }: Lms, z: number): number => m * (1 + l * s * z) ** (1 / l)

/** CDC's modified z-score, as its SAS program writes it. */
export function modifiedZOf (x: number, lms: Lms): number {
  const { l, m, s } = lms
  return x < m
    ? (x - m) / ((m - m * (1 + l * s * -2) ** (1 / l)) / 2)
    : (x - m) / ((m * (1 + 2 * l * s) ** (1 / l) - m) / 2)
}

/** The value at a modified z-score: the inverse of modifiedZOf. */
export function valueAtModifiedZ (lms: Lms, modified: number): number {
  const { m } = lms
  return modified < 0 ? m + modified * (m - valueAt(lms, -2)) / 2 : m + modified * (valueAt(lms, 2) - m) / 2
}

/** Rounded to `digits` decimals, halves away from zero. */
export function round (x: number, digits: number): number {
  const factor = 10 ** digits
  const rounded = Math.sign(x) * Math.round(Math.abs(x) * factor) / factor
  return rounded === 0 ? 0 : rounded
}

/** Φ(z) by Simpson's rule on the normal density from 0 to z (error far below the 1-decimal percentile). */
export function phi (z: number): number {
  const n = 4000
  const h = z / n
  const density = (t: number): number => Math.exp(-t * t / 2) / Math.sqrt(2 * Math.PI)
  let sum = density(0) + density(z)
  for (let i = 1; i < n; i++) sum += density(i * h) * (i % 2 === 1 ? 4 : 2)
  return 0.5 + sum * h / 3
}

/** A score as CDC's method gives it: z to 2 decimals, 100·Φ(z) to 1, flagged outside the cut-offs on the modified z. */
export function scoreByHand (x: number, lms: Lms, reference: string, [low, high]: readonly [number, number]) {
  const z = zOf(x, lms)
  const modified = modifiedZOf(x, lms)
  return { z: round(z, 2), percentile: round(100 * phi(z), 1), reference, flagged: modified < low || modified > high }
}

/** The day `days` after a `YYYY-MM-DD` date. */
export function dayAfter (date: string, days: number): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10)
}
