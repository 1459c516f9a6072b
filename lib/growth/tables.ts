import { TABLE_NAMES, TABLE_SOURCES, type TableName } from './sources'

export type Sex = 'male' | 'female'

/** The LMS parameters at one row of a table. */
export interface Lms {
  l: number
  m: number
  s: number
}

/**
 * One sex's rows of a table, keyed by whole numbers: days, months, or tenths
 * of a centimetre. Row i holds the parameters at key `first + i`.
 */
export interface LmsSeries {
  first: number
  l: Float64Array
  m: Float64Array
  s: Float64Array
}

export interface LmsTable {
  /** `age` in days or months, or `length`/`height` in cm. */
  keyColumn: string
  male: LmsSeries
  female: LmsSeries
}

export type GrowthTables = Record<TableName, LmsTable>

const KEY_COLUMNS = ['age', 'length', 'height']

/** The row's key as a whole number: sizes in cm become tenths of a cm. */
function rowKey (column: string, text: string): number {
  const value = Number(text)
  if (!Number.isFinite(value)) return Number.NaN
  if (column === 'age') return Number.isInteger(value) ? value : Number.NaN
  return Math.round(value * 10)
}

/** The L, M and S of keyed rows, each as one array in the rows' order. */
export function lmsColumns (rows: Array<[number, Lms]>): { l: Float64Array, m: Float64Array, s: Float64Array } {
  return {
    l: Float64Array.from(rows, ([, lms]) => lms.l),
    m: Float64Array.from(rows, ([, lms]) => lms.m),
    s: Float64Array.from(rows, ([, lms]) => lms.s)
  }
}

function series (rows: Array<[number, Lms]>, file: string, sex: string): LmsSeries {
  if (rows.length === 0) throw new Error(`${file}: no rows for sex ${sex}`)
  const first = rows[0][0]
  rows.forEach(([key], index) => {
    if (key !== first + index) throw new Error(`${file}: rows for sex ${sex} are not consecutive at ${key}`)
  })
  return { first, ...lmsColumns(rows) }
}

/** Parses one WHO table: tab-separated, a header line, sex 1 = male and 2 = female. */
export function parseTable (text: string, file: string): LmsTable {
  const lines = text.split(/\r?\n/).filter(line => line.trim() !== '')
  const header = (lines.shift() ?? '').split('\t').map(name => name.trim().toLowerCase())
  const keyColumn = header[1]
  if (header[0] !== 'sex' || !KEY_COLUMNS.includes(keyColumn) || header[2] !== 'l' || header[3] !== 'm' || header[4] !== 's') {
    throw new Error(`${file}: unexpected header "${header.join(' ')}"`)
  }
  const bySex: Record<string, Array<[number, Lms]>> = { 1: [], 2: [] }
  lines.forEach((line, index) => {
    const cells = line.split('\t')
    const key = rowKey(keyColumn, cells[1])
    const lms = { l: Number(cells[2]), m: Number(cells[3]), s: Number(cells[4]) }
    const rows = bySex[cells[0]]
    if (rows === undefined || Number.isNaN(key) || ![lms.l, lms.m, lms.s].every(Number.isFinite) || lms.m <= 0 || lms.s <= 0) {
      throw new Error(`${file}: line ${index + 2} is not a valid row`)
    }
    rows.push([key, lms])
  })
  return { keyColumn, male: series(bySex[1], file, '1'), female: series(bySex[2], file, '2') }
}

/** All nine tables from their file contents. */
export function parseTables (contents: ReadonlyMap<TableName, Buffer | string>): GrowthTables {
  const tables: Partial<GrowthTables> = {}
  for (const name of TABLE_NAMES) {
    const content = contents.get(name)
    const { file } = TABLE_SOURCES[name]
    if (content === undefined) throw new Error(`${file} is missing`)
    tables[name] = parseTable(content.toString(), file)
  }
  return tables as GrowthTables
}

/** The row of a series at a whole-number key, or null outside it. */
export function rowAt (table: LmsTable, sex: Sex, key: number): Lms | null {
  const rows = table[sex]
  const index = key - rows.first
  if (!Number.isInteger(index) || index < 0 || index >= rows.m.length) return null
  return { l: rows.l[index], m: rows.m[index], s: rows.s[index] }
}

/** The first and last keys of a series. */
export function keyRange (table: LmsTable, sex: Sex): [number, number] {
  const rows = table[sex]
  return [rows.first, rows.first + rows.m.length - 1]
}
