import t from 'tap'
import { execFile, spawn } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { TEST_ENV, tempDir, testConfig, testDatabase } from './helper'
import { buildApp } from '../app'
import type { CompileRequest } from '../lib/compiled-schemas'
import { serializerFactory } from '../lib/serialization'
import { validatorFactory } from '../lib/validation'
import { samples } from './schema-samples'
import { freePort } from '../db/embedded'
import { unitFlags } from '../bench/lib/service'

const ROOT = path.join(__dirname, '..')
const run = promisify(execFile)
/** CDC's growth charts as the project ships them: the files SHA256SUMS lists, and itself. */
const CDC_FILES = ['SHA256SUMS', ...readFileSync(path.join(ROOT, 'growth', 'cdc', 'SHA256SUMS'), 'utf8').trim().split('\n').map(line => line.split(/\s+/)[1])]
  .map(file => `growth/cdc/${file}`)

async function health (port: number): Promise<{ status: number, body: any } | null> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/api/health`)
    return { status: res.status, body: await res.json() }
  } catch {
    return null
  }
}

t.setTimeout(300000)

/**
 * Loaded before the service: on SIGUSR2 it writes the packages loaded so far,
 * by name, to LOADED_FILE; as the process exits, what became of the bundle's
 * compiled code (dist/server.js's codeCache) to CACHE_FILE, when set.
 */
const LOADED_PROBE = `process.on('SIGUSR2', () => {
  const names = Object.keys(require.cache).map(file => (/node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(file) ?? [])[1]).filter(Boolean)
  require('node:fs').writeFileSync(process.env.LOADED_FILE, JSON.stringify([...new Set(names)]))
})
process.on('exit', () => {
  if (process.env.CACHE_FILE) require('node:fs').writeFileSync(process.env.CACHE_FILE, String(process.mainModule.exports.codeCache))
})
`

/** The packages a process started with LOADED_PROBE has loaded until now. */
async function loadedPackages (pid: number, file: string): Promise<string[]> {
  rmSync(file, { force: true })
  process.kill(pid, 'SIGUSR2')
  for (let tries = 0; tries < 200 && !existsSync(file); tries++) await new Promise(resolve => setTimeout(resolve, 25))
  return JSON.parse(readFileSync(file, 'utf8')) as string[]
}

t.test('the built dist/ runs with production dependencies only and answers health', async t => {
  await run('npm', ['run', 'build'], { cwd: ROOT })
  for (const file of ['server.js', 'cli.js', 'scripts/wait-for-health.js', 'migrations/00000000-000000-base-schema.sql', 'db/functions/README.md', 'package.json', ...CDC_FILES, 'schedules/us-routine.json']) {
    t.ok(existsSync(path.join(ROOT, 'dist', file)), `npm run build made dist/${file}`)
  }

  // Health is asked every few seconds: its written-out serializers choose no branch at run time, which would load Ajv.
  const compiled = path.join(ROOT, 'dist', 'compiled')
  const healthSerializers = readdirSync(compiled).filter(file => file.endsWith('.js'))
    .map(file => readFileSync(path.join(compiled, file), 'utf8'))
    .filter(code => code.includes('fast-json-stringify/lib/serializer') && /\/\/ "(Health|Unhealthy)#"/.test(code))
  t.equal(healthSerializers.length, 2, 'the build wrote out the serializers of both health answers')
  t.notOk(healthSerializers.some(code => code.includes('fast-json-stringify/lib/validator')), 'and neither needs a validator')

  // postgres.js's queue in the bundle is db/postgres-queue's, and the module that installs it elsewhere is left out.
  const bundled = readFileSync(path.join(ROOT, 'dist', 'start', 'server.js'), 'utf8')
  t.match(bundled, '// dist/db/postgres-queue.js', "the bundle holds db/postgres-queue's queue")
  t.notMatch(bundled, 'node_modules/postgres/cjs/src/queue.js', "and not postgres.js's own")
  t.notMatch(bundled, 'dist/db/postgres-install.js', 'nor the module that puts it in the module cache')

  // A copy of the built service beside a production install, as on a server.
  const install = mkdtempSync(path.join(os.tmpdir(), 'child-health-install-'))
  t.teardown(() => rmSync(install, { recursive: true, force: true }))
  cpSync(path.join(ROOT, 'dist'), path.join(install, 'dist'), { recursive: true })
  for (const file of ['package.json', 'package-lock.json']) cpSync(path.join(ROOT, file), path.join(install, file))
  await run('npm', ['ci', '--omit=dev', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: install })
  for (const dev of ['tsx', 'tap']) t.notOk(existsSync(path.join(install, 'node_modules', dev)), `${dev} is not installed`)
  // Every package the lock file holds for development only is left out. TypeScript is not among them: it is an
  // optional peer of graphile-worker's configuration loader (cosmiconfig), which npm installs with it.
  const locked = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')).packages as Record<string, { dev?: boolean }>
  const devOnly = Object.entries(locked).filter(([name, entry]) => name !== '' && entry.dev === true).map(([name]) => name)
  t.ok(devOnly.length > 100, `the lock file marks ${devOnly.length} packages as for development only`)
  t.same(devOnly.filter(name => existsSync(path.join(install, name))), [], 'none of them is installed')
  const { stdout: tables } = await run(process.execPath, ['-e', 'console.log(Object.keys(require("./dist/io/growth-cdc").loadCdcTables()).length)'], { cwd: install })
  t.equal(tables.trim(), '7', 'the built code finds and checks CDC\'s seven files beside it')
  const { stdout: schedules } = await run(process.execPath, ['-e', 'console.log(require("./dist/io/schedules").schedules().map(s => s.id).join())'], { cwd: install })
  t.equal(schedules.trim(), 'us-routine', 'and the vaccine schedules beside it')
  // openid-client is ESM only: the CommonJS build loads it through require(esm), which Node 20.19 has.
  const { stdout: oidc } = await run(process.execPath, ['-e', 'console.log(typeof require("./dist/outbound/oidc").OidcProvider.newChecks().codeVerifier)'], { cwd: install })
  t.equal(oidc.trim(), 'string', 'the built code loads openid-client from the production install')

  const db = await testDatabase(t, { empty: true })
  const files = mkdtempSync(path.join(os.tmpdir(), 'child-health-files-'))
  t.teardown(() => rmSync(files, { recursive: true, force: true }))
  const port = await freePort()
  const env = {
    PATH: process.env.PATH ?? '',
    ...TEST_ENV,
    NODE_ENV: 'production',
    BCRYPT_COST: '10',
    LOG_LEVEL: 'error',
    PORT: String(port),
    DATABASE_URL: db.url,
    UPLOAD_DIR: path.join(files, 'uploads'),
    AVATAR_DIR: path.join(files, 'avatars'),
    GROWTH_DATA_DIR: path.join(files, 'growth'),
    GROWTH_DATA_URL: 'http://127.0.0.1:9/'
  }
  const probe = path.join(files, 'loaded-probe.js')
  writeFileSync(probe, LOADED_PROBE)
  const loadedFile = path.join(files, 'loaded.json')
  // As the systemd unit starts it: with its V8 flags, which the build compiled the bundle with.
  const cacheFile = path.join(files, 'code-cache.txt')
  const server = spawn(process.execPath, [...unitFlags(), '--require', probe, 'dist/server.js'], { cwd: install, env: { ...env, LOADED_FILE: loadedFile, CACHE_FILE: cacheFile }, stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  server.stderr.on('data', chunk => { stderr += chunk })
  const exited = new Promise<number | null>(resolve => server.on('exit', code => resolve(code)))
  t.teardown(() => { server.kill('SIGKILL') })

  const { stdout: waited } = await run(process.execPath, ['dist/scripts/wait-for-health.js'], { cwd: install, env, timeout: 60000 })
  t.equal(waited, '', 'the readiness wait of the systemd unit returns once the service is up')
  const answer = await health(port)
  t.equal(answer?.status, 200, 'node dist/server.js answers GET /api/health')
  t.equal(answer?.body.status, 'ok', 'with status ok')
  t.equal(answer?.body.version, JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version, 'with the version of package.json')
  const started = await loadedPackages(server.pid as number, loadedFile)
  t.ok(started.includes('fast-json-stringify'), `the probe sees what the start loaded from node_modules (${started.length} packages): the written-out serializers' library`)
  t.same(['fastify', 'pino', '@fastify/multipart', '@fastify/busboy'].filter(name => started.includes(name)), [], 'Fastify, pino and the multipart reader come from the bundle')
  t.same(['@fastify/swagger-ui', 'yaml', 'glob'].filter(name => started.includes(name)), [],
    'a start loads neither the docs page nor YAML nor glob: the libraries that require the last two as they load are bundled, and each loads at its first call')
  const registered = await fetch(`http://127.0.0.1:${port}/api/auth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'first@example.org', password: 'correct horse battery', name: 'First' })
  })
  t.equal(registered.status, 201, 'a registration hashes its password in the built worker thread, dist/io/password-worker.js')

  // The bundle (dist/start/server.js) with its libraries: tokens, schemas, validators and serializers written out, the database, the document.
  const base = `http://127.0.0.1:${port}`
  const { accessToken } = await registered.json() as { accessToken: string }
  const authorized = { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' }
  const me = await fetch(`${base}/api/me`, { headers: authorized })
  t.equal(me.status, 200, 'a token the bundle signed is accepted')
  const familyId = ((await me.json()) as { families: Array<{ id: number }> }).families[0].id
  const child = await fetch(`${base}/api/children`, { method: 'POST', headers: authorized, body: JSON.stringify({ familyId, name: 'Ada', dateOfBirth: '2024-01-15', sex: 'female' }) })
  t.equal(child.status, 201, 'a child is created')
  const childId = ((await child.json()) as { id: number }).id
  const measured = await fetch(`${base}/api/children/${childId}/measurements`, { method: 'POST', headers: authorized, body: JSON.stringify({ measuredAt: '2024-06-01', weightKg: 7.25 }) })
  t.equal(measured.status, 201, 'a measurement is created')
  const list = await fetch(`${base}/api/children/${childId}/measurements`, { headers: authorized })
  t.match(await list.json(), { data: [{ measuredAt: '2024-06-01', weightKg: 7.25 }] }, 'and listed, through a written-out serializer')
  const refused = await fetch(`${base}/api/children/${childId}/measurements`, { method: 'POST', headers: authorized, body: JSON.stringify({ measuredAt: '2024-06-01', weightKg: 1.23456, notes: 'a\u0000b' }) })
  t.equal(refused.status, 400, 'a body the written-out validator refuses is a 400')
  t.match(await refused.json(), { code: 'VALIDATION_ERROR', details: { issues: [{ path: '/body/weightKg' }, { path: '/body/notes' }] } }, 'naming each field, through the service\'s own keywords')
  const document = await fetch(`${base}/api/openapi.json`)
  t.equal(document.status, 200, 'the OpenAPI document is served')
  t.ok(((await document.json()) as { paths: object }).paths['/api/children/{childId}/measurements' as keyof object], 'and names the routes')
  t.equal((await fetch(`${base}/api/docs/`)).status, 200, 'the docs page is served')
  const yaml = await fetch(`${base}/api/docs/yaml`)
  t.equal(yaml.status, 200, 'the document is served as YAML too')
  t.match(await yaml.text(), /^openapi: 3\.1\.0\n/, 'written by YAML, loaded at this first call')
  t.ok((await loadedPackages(server.pid as number, loadedFile)).includes('yaml'), 'YAML is loaded now')
  const [{ count }] = await db.sql`select count(*)::int as count from migrations`
  t.ok(count > 0, 'it applied the migrations shipped in dist/migrations to an empty database')

  const { stdout } = await run(process.execPath, ['dist/cli.js', 'migrate'], { cwd: install, env })
  t.equal(stdout.trim(), 'the database is up to date', 'node dist/cli.js runs from the same install')

  server.kill('SIGTERM')
  t.equal(await exited, 0, 'SIGTERM stops it cleanly')
  t.equal(stderr, '', 'nothing went wrong on the way')
  t.equal(readFileSync(cacheFile, 'utf8'), 'used', 'the start ran the code the build compiled, not the bundle parsed afresh')

  // The same install, started with a configuration it refuses: the bundle loads, whatever became of the cache, then says why.
  const refusedStart = async (flags: string[]): Promise<{ codeCache: string, stderr: string }> => {
    rmSync(cacheFile, { force: true })
    const result = await run(process.execPath, [...flags, '--require', probe, 'dist/server.js'], { cwd: install, env: { ...env, DATABASE_URL: 'not a url', CACHE_FILE: cacheFile } }).then(() => null, (error: { code: number, stderr: string }) => error)
    t.equal(result?.code, 1, `with ${flags.join(' ') || 'no flags'}, a start with a bad DATABASE_URL exits with 1`)
    return { codeCache: readFileSync(cacheFile, 'utf8'), stderr: result?.stderr ?? '' }
  }
  const flagsOnly = await refusedStart(unitFlags())
  t.same(flagsOnly, { codeCache: 'used', stderr: 'Invalid configuration: DATABASE_URL must be a URL like postgres://user:password@host:5432/name\n' }, 'the unit\'s flags: the cache is used, and the service says why it stops')
  const otherFlags = await refusedStart(['--max-semi-space-size=4'])
  t.same(otherFlags, { ...flagsOnly, codeCache: 'refused' }, 'other V8 flags: V8 refuses the code, and the bundle is compiled afresh')
  const cache = path.join(install, 'dist', 'start', 'server.cache')
  const made = readFileSync(cache)
  const bundle = path.join(install, 'dist', 'start', 'server.js')
  const source = readFileSync(bundle)
  // V8 checks only the length of the source its code was made from: a change of the same length is caught by the hash.
  t.equal(source.at(-1), 0x0a, 'the bundle ends with a new line')
  writeFileSync(bundle, Buffer.concat([source.subarray(0, -1), Buffer.from(' ')]))
  t.same(await refusedStart(unitFlags()), { ...flagsOnly, codeCache: 'stale' }, 'a bundle other than the one the cache was made for, of the same length: the cache is not offered')
  writeFileSync(bundle, source)
  writeFileSync(cache, made.subarray(0, 32))
  t.same(await refusedStart(unitFlags()), { ...flagsOnly, codeCache: 'stale' }, 'a cache of the bundle\'s hash alone is not offered')
  rmSync(cache)
  t.same(await refusedStart(unitFlags()), { ...flagsOnly, codeCache: 'missing' }, 'without the cache, the bundle is compiled afresh')
})

t.test('the built service compiles no schema as it starts: the build wrote out each, and each answers as one compiled in the process', async t => {
  // The app from source, asking for each schema as the built one would, and compiling each itself.
  const asked = new Map<string, CompileRequest>()
  const db = await testDatabase(t)
  const source = await buildApp(testConfig(t, db.url), { precompiled: { find (key, request) { asked.set(key, request) } } })
  t.teardown(() => source.close())
  await source.ready()
  t.ok(asked.size > 200, `the app asks for ${asked.size} validators and serializers`)

  // The built app, from dist/, finds every one of them written out.
  const dist = (file: string): any => require(path.join(ROOT, 'dist', file))
  const config = dist('io/config.js').loadConfig({ ...TEST_ENV, DATA_DIR: tempDir(t, 'child-health-data-'), DATABASE_URL: db.url })
  const built = await dist('app.js').buildApp(config)
  t.teardown(() => built.close())
  await built.ready()
  t.equal(dist('lib/compiled-schemas.js').compiledInProcess(), 0, 'the built app compiled no schema as it started')
  const res = await built.inject({ method: 'POST', url: '/api/auth/register', payload: { email: 'a\u0000@example.org', password: 'short', name: '' } })
  t.equal(res.statusCode, 400, 'and its validators answer')
  t.match(res.json(), { code: 'VALIDATION_ERROR' })

  const written = dist('io/precompiled.js').loadPrecompiled()
  let compared = 0
  for (const [key, request] of asked) {
    const found = written.find(key, request)
    if (found === undefined) {
      t.fail(`${request.kind} of ${String(request.route.method)} ${String(request.route.url)} ${request.part} was not written out`)
      continue
    }
    const here = (request.kind === 'validator' ? validatorFactory() : serializerFactory())(request.externalSchemas, ...request.rest)(request.route as any) as any
    for (const value of samples(request.route.schema, request.externalSchemas)) {
      const [a, b] = [structuredClone(value), structuredClone(value)]
      if (request.kind === 'validator') {
        const same = found(a) === here(b) && JSON.stringify(found.errors ?? null) === JSON.stringify(here.errors ?? null) && JSON.stringify(a) === JSON.stringify(b)
        if (!same) t.fail(`the validator of ${String(request.route.method)} ${String(request.route.url)} ${request.part} differs on ${JSON.stringify(value)}`)
      } else {
        const answer = (f: (value: unknown) => string, v: unknown): string => { try { return f(v) } catch (error) { return `throws ${(error as Error).message}` } }
        const [written, compiled] = [answer(found, a), answer(here, b)]
        if (written !== compiled) t.fail(`the serializer of ${String(request.route.method)} ${String(request.route.url)} ${request.part} differs on ${JSON.stringify(value)}`)
      }
      compared++
    }
  }
  t.ok(compared > 10_000, `${compared} values gave the same answers written out and compiled in the process`)
})
