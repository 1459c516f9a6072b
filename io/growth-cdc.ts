import { readFileSync } from 'node:fs'
import path from 'node:path'
import { CDC_FILES, CDC_TABLE_NAMES, parseCdcTable, type CdcTableName, type CdcTables } from '../lib/growth/cdc'
import { sha256 } from '../lib/growth/sources'
import { oncePerFolder } from '../lib/per-folder'

/**
 * Where CDC's files are: `growth/cdc` at the root of the project, found from
 * this file (io/), so the same path works from the sources and from dist/,
 * where the build copies them.
 */
export const CDC_DIR = path.join(__dirname, '..', 'growth', 'cdc')

function readChecked (dir: string, name: CdcTableName): string {
  const { file, sha256: pinned } = CDC_FILES[name]
  let content: Buffer
  try {
    content = readFileSync(path.join(dir, file))
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`CDC growth chart ${file} is missing from ${dir}`)
    throw new Error(`CDC growth chart ${file} could not be read: ${(error as Error).message}`)
  }
  const actual = sha256(content)
  if (actual !== pinned) throw new Error(`CDC growth chart ${file} has SHA-256 ${actual}, not the pinned ${pinned}`)
  return content.toString()
}

/**
 * Reads CDC's seven files from a folder, checks each against its pinned
 * SHA-256 and parses it. A file that is missing, unreadable, changed or
 * malformed throws an Error whose message names it.
 */
export function readCdcTables (dir: string = CDC_DIR): CdcTables {
  const tables: Partial<CdcTables> = {}
  for (const name of CDC_TABLE_NAMES) tables[name] = parseCdcTable(readChecked(dir, name), CDC_FILES[name].file)
  return tables as CdcTables
}

/** Checks that CDC's seven files are in a folder as pinned, without parsing them. Throws as readCdcTables does. */
export function checkCdcFiles (dir: string = CDC_DIR): void {
  for (const name of CDC_TABLE_NAMES) readChecked(dir, name)
}

/** CDC's tables, read and parsed once per folder (by default the shipped one). Throws as readCdcTables does. */
export const loadCdcTables = oncePerFolder(readCdcTables, CDC_DIR)
