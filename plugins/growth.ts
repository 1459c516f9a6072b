import fp from 'fastify-plugin'
import { LOCKS, whileLocked } from '../db/locks'
import { errors } from '../lib/errors'
import { checkCdcFiles, loadCdcTables } from '../io/growth-cdc'
import type { CdcTables } from '../lib/growth/cdc'
import { needsWho, type ChartOptions, type GrowthReference } from '../lib/growth/charts'
import { downloadTables, readTableFiles, type TableFiles } from '../outbound/growth-tables'
import { TABLE_NAMES, TABLE_SOURCES, type TableName } from '../lib/growth/sources'
import { parseTables, type GrowthTables } from '../lib/growth/tables'
import { CLOSE_WAIT_MS, settledWithin } from '../lib/waiting'

export interface Growth {
  ready: boolean
  /** WHO's tables, parsed at their first use; null while they are missing. */
  readonly tables: GrowthTables | null
  /** Settles when the background download, if any, has ended. */
  loading: Promise<void>
  /** The tables, or the 503 GROWTH_DATA_MISSING error. */
  requireTables: () => GrowthTables
  /** CDC's 2000 charts, shipped with the service, checked at start and parsed at their first use. */
  readonly cdc: CdcTables
  /**
   * The tables a reference scores with: CDC's alone for `cdc`; WHO's too for
   * `who` and `auto`, or the 503 GROWTH_DATA_MISSING error while they are missing.
   */
  charts: (reference: GrowthReference) => { tables: GrowthTables | null, options: ChartOptions }
  /** While tables are missing, looks again in GROWTH_DATA_DIR (at most every few seconds, in the background). */
  recheck: () => void
}

/** How often a request may send the service looking in GROWTH_DATA_DIR again while tables are missing. */
const RECHECK_MS = 2000

declare module 'fastify' {
  interface FastifyInstance {
    growth: Growth
  }
}

function fileNames (names: Iterable<TableName>): string {
  return [...names].map(name => TABLE_SOURCES[name].file).join(', ')
}

/**
 * The WHO growth reference tables. They are read from GROWTH_DATA_DIR at
 * start, before the app is ready; missing ones are downloaded once in the
 * background and checked against their pinned SHA-256. Until all nine are
 * there, growth routes answer 503 and everything else works.
 */
export default fp(async function growth (fastify) {
  const { growthDataDir: dir, growthDataUrl: mirror } = fastify.config
  const log = fastify.log
  const closing = new AbortController()

  // A changed or missing file of CDC's stops the start, naming the file.
  checkCdcFiles()

  // The tables' files as found, checked against their pinned SHA-256, and the tables once parsed.
  let files: TableFiles | null = null
  let parsed: GrowthTables | null = null
  const state: Growth = {
    ready: false,
    get tables () {
      if (parsed === null && files !== null) {
        parsed = parseTables(files)
        files = null
      }
      return parsed
    },
    get cdc () {
      return loadCdcTables()
    },
    charts (reference) {
      const tables = needsWho(reference) ? state.requireTables() : null
      return { tables, options: { reference, cdc: state.cdc } }
    },
    loading: Promise.resolve(),
    requireTables () {
      if (state.tables === null) {
        state.recheck()
        throw new errors.growthDataMissing()
      }
      return state.tables
    },
    recheck () {
      if (state.ready || checking !== null || Date.now() - lastCheck < RECHECK_MS) return
      lastCheck = Date.now()
      checking = readTableFiles(dir).then(local => {
        if (local.files.size !== TABLE_NAMES.length || state.ready) return
        use(local.files)
        if (state.ready) log.info({ dir }, 'growth tables found in GROWTH_DATA_DIR; growth routes answer again')
      }, () => {}).finally(() => { checking = null })
    }
  }
  // Tables copied into GROWTH_DATA_DIR later are found when a request asks for them.
  let lastCheck = 0
  let checking: Promise<void> | null = null
  fastify.decorate('growth', state)

  /** Tables whose files are all there as pinned: parsed when first asked for, since their checksums leave nothing to go wrong. */
  function use (found: TableFiles): void {
    files = found
    parsed = null
    state.ready = true
  }

  /**
   * Downloads the missing tables, one instance at a time: the next one first
   * looks again at GROWTH_DATA_DIR, which the one before may have filled.
   */
  async function download (): Promise<void> {
    await whileLocked(fastify.sql, LOCKS.growthDownload, async () => {
      const local = await readTableFiles(dir)
      if (local.files.size === TABLE_NAMES.length) {
        use(local.files)
        return
      }
      await fetchMissing(local.files, TABLE_NAMES.filter(name => !local.files.has(name)))
    })
  }

  async function fetchMissing (found: TableFiles, missing: TableName[]): Promise<void> {
    log.info({ dir }, `growth tables missing (${fileNames(missing)}): downloading them`)
    const result = await downloadTables(dir, missing, { mirror, signal: closing.signal })
    if (closing.signal.aborted) return
    for (const [name, reason] of result.failed) log.warn({ dir }, `growth table ${TABLE_SOURCES[name].file} not downloaded: ${reason}`)
    for (const [name, reason] of result.unwritten) log.warn({ dir }, `growth table ${TABLE_SOURCES[name].file} not saved: ${reason}`)
    if (result.failed.size > 0) {
      log.warn({ dir }, 'growth routes answer 503 until the missing tables are in GROWTH_DATA_DIR')
      return
    }
    use(new Map([...found, ...result.files]))
    if (state.ready) log.info({ dir }, 'growth tables downloaded')
  }

  // The files are read while the rest of the app is registered; the app is
  // ready once they are checked, and downloads what is missing from then on.
  const reading = readTableFiles(dir)
  reading.catch(() => {})
  fastify.addHook('onReady', async () => {
    const local = await reading
    for (const [name, reason] of local.failed) log.warn({ dir }, `growth table ${TABLE_SOURCES[name].file} refused: ${reason}`)
    if (local.files.size === TABLE_NAMES.length) {
      use(local.files)
      return
    }
    state.loading = download().catch(error => {
      log.warn({ err: error, dir }, 'growth tables could not be downloaded; growth routes answer 503')
    })
  })
  fastify.addHook('preClose', async () => {
    closing.abort()
    await settledWithin(state.loading, CLOSE_WAIT_MS)
  })
}, { name: 'growth', dependencies: ['config', 'db'] })
