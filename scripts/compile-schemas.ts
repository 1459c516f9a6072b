// A step of `npm run build`: writes out the code of every validator and
// serializer the built service's routes use, and the vaccine schedule
// files' validator (dist/compiled/), so that a start loads code instead of
// compiling some two thousand schemas. The app
// is built as a start builds it, without a database: the schemas are
// compiled before any plugin touches one, and the build stops there.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { buildApp } from '../app'
import { loadConfig } from '../io/config'
import { COMPILED_DIR, COMPILED_INDEX, SCHEDULE_VALIDATOR } from '../io/precompiled'
import { scheduleValidatorCode } from '../lib/schedules'
import type { CompileRequest } from '../lib/compiled-schemas'
import { serializerCode } from '../lib/serialization'
import { validatorCode } from '../lib/validation'

/** Thrown by the first onReady hook: every schema is compiled by then, and nothing after it may run. */
class Compiled extends Error {}

async function main (): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'child-health-build-'))
  try {
    const config = loadConfig({
      NODE_ENV: 'production',
      LOG_LEVEL: 'silent',
      // Never connected to: the build stops before any plugin uses the database.
      DATABASE_URL: 'postgres://build@127.0.0.1:1/build',
      JWT_SECRET: 'build-access-secret-0123456789abcdefghij',
      JWT_REFRESH_SECRET: 'build-refresh-secret-0123456789abcdefghi',
      DATA_DIR: dataDir,
      GROWTH_DATA_DIR: path.join(dataDir, 'growth'),
      PUBLIC_URL: 'http://localhost'
    })
    const requests = new Map<string, CompileRequest>()
    const app = await buildApp(config, {
      db: { migrate: false },
      precompiled: {
        find (key, request) {
          requests.set(key, request)
          return () => true
        }
      },
      setup: app => app.addHook('onReady', async () => { throw new Compiled() })
    })
    try {
      await app.ready()
      throw new Error('the app became ready although the build stops it')
    } catch (error) {
      if (!(error instanceof Compiled)) throw error
    }
    rmSync(COMPILED_DIR, { recursive: true, force: true })
    mkdirSync(COMPILED_DIR, { recursive: true })
    for (const [key, request] of requests) {
      const code = request.kind === 'validator' ? validatorCode(request) : serializerCode(request)
      writeFileSync(path.join(COMPILED_DIR, `${key}.js`), code)
    }
    writeFileSync(path.join(COMPILED_DIR, COMPILED_INDEX), JSON.stringify([...requests.keys()].sort()) + '\n')
    writeFileSync(path.join(COMPILED_DIR, SCHEDULE_VALIDATOR), scheduleValidatorCode())
    await app.close()
    const kinds = [...requests.values()]
    console.log(`compiled ${kinds.filter(r => r.kind === 'validator').length} validators and ${kinds.filter(r => r.kind === 'serializer').length} serializers into ${path.relative(process.cwd(), COMPILED_DIR)}`)
  } finally {
    rmSync(dataDir, { recursive: true, force: true })
  }
}

main().catch(error => {
  process.stderr.write(`compiling the schemas failed: ${error instanceof Error ? error.stack : String(error)}\n`)
  process.exit(1)
})
