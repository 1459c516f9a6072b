import os from 'node:os'
import path from 'node:path'
import { downloadTables, readTableFiles } from '../../outbound/growth-tables'
import { TABLE_NAMES } from '../../lib/growth/sources'

/**
 * Where the tests find WHO's growth tables. The tables are WHO's data and are
 * never part of the project: the tests use the folder `growth` beside the
 * project when it is there, otherwise a cache folder of the user's, filled
 * once from WHO's pinned files (or the mirror in GROWTH_DATA_URL), each file
 * checked against its pinned SHA-256.
 */
export interface TableSearch {
  /** The folder beside the project (`../shared/growth`). */
  shared: string
  /** The user's cache folder, outside the project. */
  cache: string
  /** A folder URL holding the nine files, or null for WHO's pinned files. */
  mirror: string | null
}

export function defaultSearch (env: NodeJS.ProcessEnv = process.env): TableSearch {
  const cacheHome = env.XDG_CACHE_HOME !== undefined && env.XDG_CACHE_HOME !== '' ? env.XDG_CACHE_HOME : path.join(os.homedir(), '.cache')
  return {
    shared: env.TEST_GROWTH_SHARED_DIR ?? path.join(__dirname, '..', '..', '..', 'shared', 'growth'),
    cache: env.TEST_GROWTH_CACHE_DIR ?? path.join(cacheHome, 'child-health', 'growth'),
    mirror: env.GROWTH_DATA_URL !== undefined && env.GROWTH_DATA_URL !== '' ? env.GROWTH_DATA_URL : null
  }
}

async function complete (dir: string): Promise<boolean> {
  const { files } = await readTableFiles(dir)
  return files.size === TABLE_NAMES.length
}

/**
 * A folder holding all nine checked tables. Throws an error whose message is
 * one line saying what to do when they can be neither found nor downloaded.
 */
export async function findTestTables (search: TableSearch = defaultSearch()): Promise<string> {
  if (await complete(search.shared)) return search.shared
  const { files, failed } = await readTableFiles(search.cache)
  const missing = TABLE_NAMES.filter(name => !files.has(name))
  if (missing.length === 0) return search.cache
  const fetched = await downloadTables(search.cache, missing, { mirror: search.mirror })
  if (fetched.failed.size === 0 && fetched.unwritten.size === 0) return search.cache
  const [first] = [...fetched.failed.values(), ...fetched.unwritten.values(), ...failed.values()]
  const from = search.mirror ?? 'WHO\'s published files'
  const line = (text: string): string => text.replace(/\s+/g, ' ')
  throw new Error(line(
    `The tests need WHO's nine growth tables and could not get them (${missing.length} missing; ${from}: ${first}). ` +
    `Copy them into ${search.cache}, or set GROWTH_DATA_URL to a folder URL that serves them, then run npm test again.`
  ))
}
