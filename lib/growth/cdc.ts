import { lmsColumns, type Lms, type Sex } from './tables'

/** How a growth response credits CDC's charts. */
export const CDC_SOURCE = 'CDC 2000 growth charts'

/**
 * CDC's seven data files of the 2000 growth charts, each pinned by its SHA-256
 * (the sums of growth/cdc/SHA256SUMS). The infant charts run from birth to 36
 * months (weight-for-length from 45 to 103.5 cm), the others from 2 to 20 years.
 */
export const CDC_FILES = {
  weightForAgeInfant: { file: 'wtageinf.csv', sha256: 'd75effeb37cddd9e6730d7ddb0be56f839602429812d1a12eb90507be4d842c4' },
  lengthForAgeInfant: { file: 'lenageinf.csv', sha256: '3685a88d25827b48d9f8deac84033bcf9362373a7ef331714743d1bc66e12279' },
  headCircumferenceForAgeInfant: { file: 'hcageinf.csv', sha256: '321aa07f41ad81100e59f84fe0b2b5f8f8a0af4f0052d63986a2c5818c38468d' },
  weightForLengthInfant: { file: 'wtleninf.csv', sha256: 'f062108efd6aa17b31353ecb44b55894f7bf4cdf5e3e937406709f4568f3efc3' },
  weightForAge: { file: 'wtage.csv', sha256: '66e45ffd89d0e537180c71bbf61477c278be08c114ea9abde3a78ff3c2decfae' },
  statureForAge: { file: 'statage.csv', sha256: '64168c76a52b533a79a509197e292a3ec41a4a16ddb54dc321921b2bebf4c879' },
  bmiForAge: { file: 'bmiagerev.csv', sha256: '8c06c2f2d4eeee8749ef3b2c6257261d0be79cd6f7a5ece7cf006497e1cdd4fc' }
} as const satisfies Record<string, { file: string; sha256: string }>

export type CdcTableName = keyof typeof CDC_FILES

export const CDC_TABLE_NAMES = Object.keys(CDC_FILES) as CdcTableName[]

/** One sex's rows of a CDC file: the keys (months, or cm) in increasing order, and L, M and S at each. */
export interface CdcSeries {
  keys: Float64Array
  l: Float64Array
  m: Float64Array
  s: Float64Array
}

export interface CdcTable {
  /** `agemos` (age in months) or `length` (cm). */
  keyColumn: 'agemos' | 'length'
  male: CdcSeries
  female: CdcSeries
}

export type CdcTables = Record<CdcTableName, CdcTable>

/** Tolerates the binary error of keys such as 0.5 months or 45.5 cm. */
const EPSILON = 1e-9

function series (rows: Array<[number, Lms]>, file: string, sex: string): CdcSeries {
  if (rows.length === 0) throw new Error(`${file}: no rows for sex ${sex}`)
  rows.forEach(([key], index) => {
    if (index > 0 && !(key > rows[index - 1][0])) throw new Error(`${file}: rows for sex ${sex} are not in increasing order at ${key}`)
  })
  return { keys: Float64Array.from(rows, ([key]) => key), ...lmsColumns(rows) }
}

/** Parses one CDC file: comma-separated, header `Sex,Agemos|Length,L,M,S,…`, sex 1 = male and 2 = female. */
export function parseCdcTable (text: string, file: string): CdcTable {
  const lines = text.split(/\r?\n/).filter(line => line.trim() !== '')
  const header = (lines.shift() ?? '').split(',').map(name => name.trim().toLowerCase())
  const keyColumn = header[1]
  if (header[0] !== 'sex' || (keyColumn !== 'agemos' && keyColumn !== 'length') || header[2] !== 'l' || header[3] !== 'm' || header[4] !== 's') {
    throw new Error(`${file}: unexpected header "${header.join(',')}"`)
  }
  const bySex: Record<string, Array<[number, Lms]>> = { 1: [], 2: [] }
  lines.forEach((line, index) => {
    const cells = line.split(',').map(cell => cell.trim())
    const numbers = cells.slice(1, 5).map(cell => cell === '' ? Number.NaN : Number(cell))
    const [key, l, m, s] = numbers
    const rows = bySex[cells[0]]
    if (rows === undefined || numbers.length < 4 || !numbers.every(Number.isFinite) || key < 0 || m <= 0 || s <= 0) {
      throw new Error(`${file}: line ${index + 2} is not a valid row`)
    }
    rows.push([key, { l, m, s }])
  })
  return { keyColumn, male: series(bySex[1], file, '1'), female: series(bySex[2], file, '2') }
}

function rowOf (rows: CdcSeries, index: number): Lms {
  return { l: rows.l[index], m: rows.m[index], s: rows.s[index] }
}

/**
 * L, M and S at a key (months, or cm): the row's own at a row's key, else
 * interpolated linearly between the two rows around it. Null outside the
 * table: CDC's charts are not extrapolated.
 */
export function cdcLms (table: CdcTable, sex: Sex, key: number): Lms | null {
  const rows = table[sex]
  const { keys } = rows
  const last = keys.length - 1
  if (!(key >= keys[0] - EPSILON && key <= keys[last] + EPSILON)) return null
  // The first row whose key is not below the key.
  let low = 0
  let high = last
  while (low < high) {
    const middle = (low + high) >> 1
    if (keys[middle] < key - EPSILON) low = middle + 1
    else high = middle
  }
  if (Math.abs(keys[low] - key) <= EPSILON) return rowOf(rows, low)
  const below = rowOf(rows, low - 1)
  const above = rowOf(rows, low)
  const share = (key - keys[low - 1]) / (keys[low] - keys[low - 1])
  return {
    l: below.l + share * (above.l - below.l),
    m: below.m + share * (above.m - below.m),
    s: below.s + share * (above.s - below.s)
  }
}
