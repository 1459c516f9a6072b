import t, { type Test } from 'tap'
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { TABLE_NAMES, TABLE_SOURCES, tableUrl } from '../lib/growth/sources'
import { build, authHeaders, growthDir } from './helper'
import { findTestTables } from './setup/growth'

const TABLES = growthDir()
const FILES = TABLE_NAMES.map(name => TABLE_SOURCES[name].file).sort()
const CURVE = '/api/growth-standards/weight-for-age?sex=female&from=0&to=10'

interface Mirror {
  url: string
  requests: string[]
}

/** A local HTTP server serving the run's tables; `altered` names a file served with one byte changed. */
async function mirror (t: Test, options: { altered?: string; silent?: boolean } = {}): Promise<Mirror> {
  const requests: string[] = []
  const server = http.createServer((request, response) => {
    const name = path.basename(request.url ?? '')
    requests.push(name)
    if (options.silent === true) return
    let content: Buffer
    try {
      content = readFileSync(path.join(TABLES, name))
    } catch {
      response.writeHead(404).end()
      return
    }
    if (name === options.altered) content[200] = content[200] === 0x31 ? 0x32 : 0x31
    response.writeHead(200, { 'content-type': 'text/plain' }).end(content)
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>(resolve => {
    server.closeAllConnections()
    server.close(() => resolve())
  }))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/growth/`, requests }
}

/** A port nothing listens on. */
async function closedPort (): Promise<number> {
  const server = http.createServer()
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>(resolve => server.close(() => resolve()))
  return port
}

function emptyDir (t: Test): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'child-health-growth-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

const sha256 = (file: string): string => createHash('sha256').update(readFileSync(file)).digest('hex')

function isGrowthMissing (t: Test, res: { statusCode: number; headers: Record<string, unknown>; json: () => any }): void {
  t.equal(res.statusCode, 503)
  t.equal(res.headers['retry-after'], '5')
  const body = res.json()
  t.same(Object.keys(body).sort(), ['code', 'details', 'error'])
  t.equal(body.code, 'GROWTH_DATA_MISSING')
  t.same(body.details, {})
  t.match(body.error, /GROWTH_DATA_DIR/, 'the message says how to install the tables')
}

t.test('the pinned sums are those of the run\'s tables, and the pinned URLs are WHO\'s', async t => {
  for (const name of TABLE_NAMES) {
    const { file, sha256: pinned } = TABLE_SOURCES[name]
    t.equal(sha256(path.join(TABLES, file)), pinned, file)
  }
  t.equal(tableUrl('weightForAge2006', null),
    'https://raw.githubusercontent.com/WorldHealthOrganization/anthro/b776d8a12b1c97369c748b561159fd2ec4f4db58/data-raw/growthstandards/weianthro.txt')
  t.equal(tableUrl('bmiForAge2007', null),
    'https://raw.githubusercontent.com/WorldHealthOrganization/anthroplus/799a7deaf7dff57f2abef5781f74b243f0aa6194/data-raw/growthstandards/bfawho2007.txt')
  t.equal(tableUrl('weightForAge2006', 'http://mirror.example/who/'), 'http://mirror.example/who/weianthro.txt')
})

t.test('missing tables are downloaded once, checked and saved', async t => {
  const dir = emptyDir(t)
  const source = await mirror(t)
  const app = await build(t, { env: { GROWTH_DATA_DIR: dir, GROWTH_DATA_URL: source.url } })
  await app.growth.loading
  t.equal(app.growth.ready, true)
  t.same(source.requests.sort(), FILES, 'each file is asked for once')
  t.same(readdirSync(dir).sort(), FILES, 'the nine files are saved, and no temporary file is left')
  for (const file of FILES) t.equal(sha256(path.join(dir, file)), sha256(path.join(TABLES, file)), `${file} is saved as served`)

  const res = await app.inject({ method: 'GET', headers: await authHeaders(app), url: CURVE })
  t.equal(res.statusCode, 200)
  t.equal(res.json().points.length, 11)

  const again = await build(t, { env: { GROWTH_DATA_DIR: dir, GROWTH_DATA_URL: source.url } })
  t.equal(again.growth.ready, true, 'the next start reads the saved files')
  t.equal(source.requests.length, FILES.length, 'without downloading anything')
})

t.test('only the missing or refused tables are downloaded', async t => {
  const dir = emptyDir(t)
  const [absent, tampered, ...kept] = FILES
  for (const file of kept) copyFileSync(path.join(TABLES, file), path.join(dir, file))
  writeFileSync(path.join(dir, tampered), 'sex\tage\tl\tm\ts\r\n')
  const source = await mirror(t)
  const logs: string[] = []
  const app = await build(t, { logs, env: { GROWTH_DATA_DIR: dir, GROWTH_DATA_URL: source.url } })
  await app.growth.loading
  t.same(source.requests.sort(), [absent, tampered].sort())
  t.equal(app.growth.ready, true)
  t.equal(sha256(path.join(dir, tampered)), sha256(path.join(TABLES, tampered)), 'the refused file is replaced by the checked one')
  t.ok(logs.some(line => JSON.parse(line).level === 40 && line.includes(tampered)), 'the refused file is logged at warn level')
})

t.test('a file whose checksum does not match is refused and not kept', async t => {
  const dir = emptyDir(t)
  const altered = 'wfhanthro.txt'
  const source = await mirror(t, { altered })
  const logs: string[] = []
  const app = await build(t, { logs, env: { GROWTH_DATA_DIR: dir, GROWTH_DATA_URL: source.url } })
  await app.growth.loading
  t.equal(app.growth.ready, false)
  t.same(readdirSync(dir).sort(), FILES.filter(file => file !== altered), 'the altered file is not kept; the good ones are')

  isGrowthMissing(t, await app.inject({ method: 'GET', headers: await authHeaders(app), url: CURVE }))
  const health = await app.inject({ method: 'GET', headers: await authHeaders(app), url: '/api/health' })
  t.equal(health.statusCode, 200, 'everything else works')

  const warnings = logs.map(line => JSON.parse(line)).filter(entry => entry.level === 40)
  t.ok(warnings.some(entry => entry.msg.includes(altered) && entry.msg.includes('SHA-256')), 'the refusal is logged at warn level')
})

t.test('an unreachable source leaves growth routes at 503 and everything else working', async t => {
  const dir = emptyDir(t)
  const logs: string[] = []
  const app = await build(t, { logs, env: { GROWTH_DATA_DIR: dir, GROWTH_DATA_URL: `http://127.0.0.1:${await closedPort()}/` } })
  await app.growth.loading
  t.equal(app.growth.ready, false)
  t.same(readdirSync(dir), [], 'nothing is written')
  isGrowthMissing(t, await app.inject({ method: 'GET', headers: await authHeaders(app), url: CURVE }))
  t.equal((await app.inject({ method: 'GET', headers: await authHeaders(app), url: '/api/health' })).statusCode, 200)
  t.equal((await app.inject({ method: 'GET', headers: await authHeaders(app), url: '/api/growth-standards/nonsense?sex=female' })).statusCode, 400, 'validation still comes first')
  t.ok(logs.some(line => JSON.parse(line).level === 40 && line.includes('not downloaded')), 'the failure is logged at warn level')
})

t.test('the start does not wait for the download, and closing stops it', async t => {
  const dir = emptyDir(t)
  const source = await mirror(t, { silent: true })
  const started = Date.now()
  const app = await build(t, { env: { GROWTH_DATA_DIR: dir, GROWTH_DATA_URL: source.url } })
  t.ok(Date.now() - started < 10_000, 'the app is ready while the source has not answered')
  isGrowthMissing(t, await app.inject({ method: 'GET', headers: await authHeaders(app), url: CURVE }))
  t.equal((await app.inject({ method: 'GET', headers: await authHeaders(app), url: '/api/health' })).statusCode, 200)

  const closing = Date.now()
  await app.close()
  t.ok(Date.now() - closing < 5000, 'closing aborts the download')
  t.same(readdirSync(dir), [])
})

t.test('a clone without the tables beside it fills a cache folder once from the mirror', async t => {
  const root = emptyDir(t)
  const source = await mirror(t)
  const search = { shared: path.join(root, 'no-shared'), cache: path.join(root, 'cache', 'growth'), mirror: source.url }
  t.equal(await findTestTables(search), search.cache)
  t.same(source.requests.sort(), FILES, 'each file is asked for once')
  t.same(readdirSync(search.cache).sort(), FILES)
  t.equal(await findTestTables(search), search.cache, 'the next run uses the cache')
  t.equal(source.requests.length, FILES.length, 'without downloading anything')
  t.equal(await findTestTables({ ...search, shared: TABLES }), TABLES, 'the folder beside the project comes first')
})

t.test('without the tables and without a network, the test run stops with one clear line', async t => {
  const root = emptyDir(t)
  const cache = path.join(root, 'cache')
  const run = spawnSync(process.execPath, ['--import', 'tsx', path.join(__dirname, 'setup', 'before.ts')], {
    cwd: path.join(__dirname, '..'),
    encoding: 'utf8',
    timeout: 60_000,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: root,
      TEST_GROWTH_SHARED_DIR: path.join(root, 'no-shared'),
      TEST_GROWTH_CACHE_DIR: cache,
      GROWTH_DATA_URL: `http://127.0.0.1:${await closedPort()}/`
    }
  })
  t.equal(run.status, 1)
  t.equal(run.stdout, '')
  const lines = run.stderr.split('\n').filter(line => line !== '')
  t.equal(lines.length, 1, 'one line')
  t.match(lines[0], /^The tests need WHO's nine growth tables/)
  t.match(lines[0], cache, 'it names the folder to copy them into')
  t.match(lines[0], /GROWTH_DATA_URL/, 'and the setting of a mirror')
  t.notMatch(lines[0], /\bat \S+:\d+/, 'no stack trace')
})
