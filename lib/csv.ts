import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { setImmediate as nextTurn } from 'node:timers/promises'
import type * as CsvParse from 'csv-parse'

/**
 * Reading a CSV file a spreadsheet wrote: a header row naming the columns,
 * `,` or `;` between cells, quoted cells that may hold separators, quotes and
 * line breaks, a BOM and CRLF. Problems are named where a spreadsheet user
 * finds them: `/header/<column>`, `/line/<n>` (the file's own line numbers,
 * the header being line 1), or `/body` for the file as a whole.
 */

export interface CsvIssue {
  path: string
  message: string
}

/** A row of the file: its cells by column name; an empty cell is left out. */
export type CsvRow = Record<string, string>

export interface CsvRules {
  /** The columns a file may have, named exactly. */
  columns: readonly string[]
  /** The columns it must have. */
  required: readonly string[]
  /** The most rows after the header. */
  maxRows: number
}

export interface CsvTable {
  rows: CsvRow[]
  /** When there are any, the rows are not to be used. */
  issues: CsvIssue[]
  /** The line of the file each row starts on (the header is line 1), read when asked. */
  lines: () => Promise<number[]>
}

const LF = 0x0a
const CR = 0x0d

/** A file is parsed this many bytes at a time, the event loop free between them. */
const CHUNK_BYTES = 64 * 1024
/** The longest record, in characters: far more than a row of measurements needs. */
export const MAX_RECORD_CHARACTERS = 64 * 1024

/**
 * `;` when the header line has one and no comma outside quotes, `,` otherwise.
 * Blank lines before it are passed over; only the start of the file is read.
 */
export function separatorOf (text: string): ',' | ';' {
  let quoted = false
  let started = false
  let commas = 0
  let semicolons = 0
  for (const char of text.slice(0, MAX_RECORD_CHARACTERS)) {
    if (char === '"') quoted = !quoted
    else if (quoted) continue
    else if (char === '\n' || char === '\r') {
      if (started) break
      continue
    } else if (char === ',') commas += 1
    else if (char === ';') semicolons += 1
    if (!/[\s\uFEFF]/.test(char)) started = true
  }
  return semicolons > 0 && commas === 0 ? ';' : ','
}

const DECIMAL = /^-?\d+(?:[.,]\d+)?$/

/** A cell as a number when it is a plain decimal, with a point or a comma (`3.5`, `3,5`); undefined otherwise. */
export function plainDecimal (cell: string): number | undefined {
  if (!DECIMAL.test(cell)) return undefined
  const value = Number(cell.replace(',', '.'))
  return Number.isFinite(value) ? value : undefined
}

/** A column name as a segment of a JSON pointer. */
function pointer (name: string): string {
  return name.replace(/~/g, '~0').replace(/\//g, '~1')
}

/**
 * The line numbers of a file, read forward: the line a record starts on, from
 * the byte where the one before it ended. Blank lines between are passed over;
 * CRLF, LF and a lone CR each end a line.
 */
function lineCounter (bytes: Buffer) {
  let at = 0
  let line = 1
  const step = (): void => {
    const byte = bytes[at]
    if (byte === LF || (byte === CR && bytes[at + 1] !== LF)) line += 1
    at += 1
  }
  return function startOf (offset: number): number {
    while (at < offset && at < bytes.length) step()
    while (at < bytes.length && (bytes[at] === 0x20 || bytes[at] === 0x09 || bytes[at] === LF || bytes[at] === CR)) step()
    return line
  }
}

class TooManyRows extends Error {}

interface CsvParseError extends Error {
  code?: string
  record?: string[]
}

function plural (count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`
}

function malformed (error: CsvParseError, columns: number): string {
  switch (error.code) {
    case 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH':
      return `has ${error.record === undefined ? 'another number of cells' : plural(error.record.length, 'cell')}; the header names ${plural(columns, 'column')}`
    case 'CSV_QUOTE_NOT_CLOSED':
      return 'opens a quote that is never closed'
    case 'CSV_INVALID_CLOSING_QUOTE':
    case 'CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE':
      return 'has text after the closing quote of a cell: put the whole cell in quotes and double the quotes inside'
    case 'CSV_MAX_RECORD_SIZE':
      return `is longer than ${MAX_RECORD_CHARACTERS} characters`
    case 'INVALID_OPENING_QUOTE':
    case 'CSV_INVALID_OPENING_QUOTE':
      return 'has a quote inside a cell that is not quoted: put the whole cell in quotes and double the quotes inside'
    default:
      return `is not valid CSV: ${error.message}`
  }
}

function headerIssues (header: string[], rules: CsvRules): CsvIssue[] {
  const issues: CsvIssue[] = []
  const seen = new Set<string>()
  header.forEach((name, index) => {
    const path = `/header/${pointer(name)}`
    if (name === '') issues.push({ path, message: `column ${index + 1} has no name` })
    else if (!rules.columns.includes(name)) issues.push({ path, message: `is not allowed: the columns are ${rules.columns.join(', ')}` })
    else if (seen.has(name)) issues.push({ path, message: 'appears more than once' })
    seen.add(name)
  })
  for (const name of rules.required) {
    if (!seen.has(name)) issues.push({ path: `/header/${pointer(name)}`, message: 'is required' })
  }
  return issues
}

/** A record longer than MAX_RECORD_CHARACTERS, however many cells it has. */
class RecordTooLong extends Error {
  readonly code = 'CSV_MAX_RECORD_SIZE'
}

/**
 * The bytes of a file a chunk at a time, with a turn of the event loop
 * between chunks. `open` answers how many bytes the record being read has so
 * far: a record of many small cells is bounded too, not only a long cell.
 */
async function * inChunks (bytes: Buffer, open: () => number): AsyncGenerator<Buffer> {
  for (let at = 0; at < bytes.length; at += CHUNK_BYTES) {
    yield bytes.subarray(at, at + CHUNK_BYTES)
    await nextTurn()
    if (open() > MAX_RECORD_CHARACTERS) throw new RecordTooLong()
  }
}

interface Parsed {
  /** The records kept, the header first. */
  records: string[][]
  /** The line each record kept starts on, when asked for. */
  lines: number[]
  issue: CsvIssue | null
}

function parserFor (text: string, onRecord?: (cells: string[], context: { bytes: number }) => string[] | null) {
  // Loaded at the first CSV read, not at every start.
  const { parse } = require('csv-parse') as typeof CsvParse
  return parse({
    delimiter: separatorOf(text),
    bom: true,
    relax_column_count: false,
    skip_empty_lines: true,
    trim: true,
    max_record_size: MAX_RECORD_CHARACTERS,
    ...(onRecord === undefined ? {} : { on_record: onRecord })
  })
}

/**
 * Parses a file as a stream a chunk at a time. Without `withLines` the
 * records come as they are, which costs a third of the parse with the line
 * of each record; the lines are needed only to name a problem, and a second
 * parse finds them then.
 */
async function parseFile (text: string, rules: CsvRules, withLines: boolean): Promise<Parsed> {
  const bytes = Buffer.from(text, 'utf8')
  const records: string[][] = []
  const lines: number[] = []
  let ended = 0
  let columns = 0
  let rowCount = 0
  /** A record kept, or false for a row of empty cells, left out as a blank line is. */
  const keep = (cells: string[]): boolean => {
    if (cells.every(cell => cell === '')) return false
    if (columns === 0) columns = cells.length
    else if (++rowCount > rules.maxRows) throw new TooManyRows()
    records.push(cells)
    return true
  }
  const startOf = lineCounter(bytes)
  const parser = withLines
    ? parserFor(text, (cells, context) => {
      const line = startOf(ended)
      ended = context.bytes
      if (keep(cells)) lines.push(line)
      // Kept here rather than passed down the stream: a write a record costs more than the parsing.
      return null
    })
    : parserFor(text)
  try {
    await pipeline(Readable.from(inChunks(bytes, () => parser.info.bytes - ended)), parser, async function (source: AsyncIterable<string[]>) {
      for await (const cells of source) {
        ended = parser.info.bytes
        keep(cells)
      }
    })
  } catch (error) {
    if (error instanceof TooManyRows) return { records, lines, issue: { path: '/body', message: `must have at most ${rules.maxRows} rows after the header` } }
    if (!withLines) return await parseFile(text, rules, true)
    return { records, lines, issue: { path: `/line/${startOf(ended)}`, message: malformed(error as CsvParseError, columns) } }
  }
  return { records, lines, issue: null }
}

/**
 * The rows of a CSV file with a header row, parsed as a stream a chunk at a
 * time (csv-parse), so that a large or hostile file never holds the event loop
 * and a record is bounded as it is read. Rows whose cells are all empty are
 * left out, as blank lines are; cells are trimmed. A malformed file, a wrong
 * header, no rows or too many are issues. The line each row starts on is read
 * when it is asked for (`lines`), by a second parse: only a problem needs it.
 */
export async function readCsv (text: string, rules: CsvRules): Promise<CsvTable> {
  let lines: Promise<number[]> | undefined
  const lineNumbers = (): Promise<number[]> => {
    lines ??= parseFile(text, rules, true).then(parsed => parsed.lines.slice(1))
    return lines
  }
  const { records, issue } = await parseFile(text, rules, false)
  const refused = (issues: CsvIssue[]): CsvTable => ({ rows: [], issues, lines: lineNumbers })
  if (issue !== null) return refused([issue])
  if (records.length === 0) return refused([{ path: '/body', message: 'is empty: send a header row and at least one row' }])
  const [names, ...rows] = records
  const issues = headerIssues(names, rules)
  if (issues.length > 0) return refused(issues)
  if (rows.length === 0) return refused([{ path: '/body', message: 'has no rows after the header' }])
  return {
    rows: rows.map(cells => {
      const named: Record<string, string> = {}
      cells.forEach((cell, column) => { if (cell !== '') named[names[column]] = cell })
      return named
    }),
    issues: [],
    lines: lineNumbers
  }
}
