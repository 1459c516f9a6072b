import { createHash } from 'node:crypto'

/** How every growth response credits WHO. */
export const GROWTH_SOURCE = 'WHO Child Growth Standards (2006); WHO Reference 2007'

const REPOSITORIES = {
  anthro: 'WorldHealthOrganization/anthro/b776d8a12b1c97369c748b561159fd2ec4f4db58',
  anthroplus: 'WorldHealthOrganization/anthroplus/799a7deaf7dff57f2abef5781f74b243f0aa6194'
}

interface TableSource {
  file: string
  repository: keyof typeof REPOSITORIES
  sha256: string
}

/**
 * The nine WHO tables, each pinned to one published version by its SHA-256.
 * The WHO 2006 tables come from `anthro`, the WHO 2007 ones from `anthroplus`.
 */
export const TABLE_SOURCES = {
  weightForAge2006: { file: 'weianthro.txt', repository: 'anthro', sha256: 'bc15a6a623dd1d5beaeed1497666332aa54bc4ccd15ff9658c487d79694ab77b' },
  lengthForAge2006: { file: 'lenanthro.txt', repository: 'anthro', sha256: '709f7a11881451daf7820f022d363d5bdb93746b5361d6bd9218af6ff838e0c2' },
  headCircumferenceForAge2006: { file: 'hcanthro.txt', repository: 'anthro', sha256: 'e794e46f06b91223ad2c6435148dc08794a1d75b67613a652c3151201a98bf7c' },
  bmiForAge2006: { file: 'bmianthro.txt', repository: 'anthro', sha256: '78a4364e99303114fb2c458d28d64c6d10ac33832a5d5b2d437bc5cea1c93a0d' },
  weightForLength2006: { file: 'wflanthro.txt', repository: 'anthro', sha256: 'ad470cf41b147bd2a16026e57fd17968df7bf746b9f0bf2ff85df95239643778' },
  weightForHeight2006: { file: 'wfhanthro.txt', repository: 'anthro', sha256: '0050d31041c2f7d4f8a34f27e8066fd73a24806835b9e4a0de1a7ee46d54d582' },
  weightForAge2007: { file: 'wfawho2007.txt', repository: 'anthroplus', sha256: '9234dc640ba54001a9afd42ef15ab675b211a721c8f3c0a07c3431fd9cea0e1c' },
  heightForAge2007: { file: 'hfawho2007.txt', repository: 'anthroplus', sha256: '9ac02aa4908f8ec3c6ba2362a4c7e1356043408b2873548ca22eedc016c235ad' },
  bmiForAge2007: { file: 'bfawho2007.txt', repository: 'anthroplus', sha256: '70ef3260df08e48ce560c28cff4e733db78fb952cbd881eba63c9d3a15f38a6a' }
} as const satisfies Record<string, TableSource>

export type TableName = keyof typeof TABLE_SOURCES

export const TABLE_NAMES = Object.keys(TABLE_SOURCES) as TableName[]

/** Where a table is downloaded from: the configured mirror folder, or WHO's pinned file. */
export function tableUrl (name: TableName, mirror: string | null): string {
  const { file, repository } = TABLE_SOURCES[name]
  if (mirror !== null) return new URL(file, mirror.endsWith('/') ? mirror : mirror + '/').toString()
  return `https://raw.githubusercontent.com/${REPOSITORIES[repository]}/data-raw/growthstandards/${file}`
}

/** The SHA-256 of a file's bytes, hex, as the pinned sums are written. */
export function sha256 (content: Buffer): string {
  return createHash('sha256').update(content).digest('hex')
}
