import t from 'tap'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { loadConfig } from '../io/config'
import { unitFlags } from '../bench/lib/service'
import { all, final, finalEnv, healthcheck, ignored, lastOf, ROOT, run, runHealthcheck, simulate, split, stages, type Stage } from './containerfile'

// Needs neither the test database nor WHO's growth tables: `npm run
// check:deploy` runs this file on its own, offline. The health check against
// the real app is in containerfile-health.test.ts.

t.test('every stage builds on the official Node 24 image', async t => {
  t.ok(stages.length >= 2, 'a multi-stage build')
  for (const stage of stages) t.match(stage.image, /^(docker\.io\/library\/)?node:24(-[a-z0-9-]+)?$/, `${stage.name ?? 'the final stage'}: ${stage.image}`)
  t.same(all(final, 'WORKDIR').map(step => step.args), ['/app'], 'the final stage works in /app')
})

t.test('every path it copies exists after a build, and its command is the built entry point', async t => {
  const work = mkdtempSync(path.join(os.tmpdir(), 'child-health-image-'))
  t.teardown(() => rmSync(work, { recursive: true, force: true }))
  for (const stage of stages) {
    for (const step of all(stage, 'COPY')) {
      const { flags, words } = split(step.args)
      if (flags.from !== undefined) continue
      for (const source of words.slice(0, -1)) {
        t.ok(existsSync(path.join(ROOT, source)), `COPY ${source} exists in the project`)
        t.notOk(ignored.includes(source), `and .dockerignore keeps it in the build context`)
      }
    }
  }
  t.ok(ignored.includes('node_modules') && ignored.includes('dist') && ignored.includes('data'), 'installed, built and local data stay out of the context')

  const built = new Map<string, string>()
  for (const [index, stage] of stages.entries()) {
    const dir = path.join(work, String(index))
    mkdirSync(dir, { recursive: true })
    await simulate(stage, dir, built)
    if (stage.name !== null) built.set(stage.name, dir)
  }
  const image = path.join(work, String(stages.length - 1))

  const cmd = split(lastOf(final, 'CMD')?.args ?? '').words
  // The unit's V8 flags, which the bench starts the service with too.
  const flags = unitFlags()
  t.ok(flags.includes('--max-semi-space-size=2'), 'the unit keeps V8\'s young generation small')
  t.ok(flags.includes('--heap-growing-percent=50'), 'and lets the old generation grow by half before a collection')
  t.same(unitFlags(path.join('deploy', 'child-health@.service')), flags, 'the instances\' unit starts node with the same flags, which the build compiles the bundle with')
  t.same(cmd, ['node', ...flags, 'dist/server.js'], 'CMD runs the built entry point with node and the unit\'s V8 flags, in exec form')
  t.ok(existsSync(path.join(image, 'dist', 'server.js')), 'dist/server.js is in the image')
  t.ok(existsSync(path.join(image, 'dist', 'start', 'server.cache')), 'and V8\'s code of the bundle, which the build stage made with the unit\'s flags')
  t.ok(existsSync(path.join(image, 'dist', 'cli.js')), 'and so is the command line, dist/cli.js')
  t.ok(existsSync(path.join(image, 'dist', 'migrations', '00000000-000000-base-schema.sql')), 'and the migrations beside them')
  t.ok(existsSync(path.join(image, 'dist', 'db', 'functions', 'README.md')), 'and today\'s SQL functions, with their index')
  const cdcFiles = readFileSync(path.join(ROOT, 'growth', 'cdc', 'SHA256SUMS'), 'utf8').trim().split('\n').map(line => line.split(/\s+/)[1])
  for (const file of ['SHA256SUMS', ...cdcFiles]) t.ok(existsSync(path.join(image, 'dist', 'growth', 'cdc', file)), `and CDC's growth chart file ${file}`)
  const { stdout: tables } = await run(process.execPath, ['-e', 'console.log(Object.keys(require("./dist/io/growth-cdc").loadCdcTables()).length)'], { cwd: image })
  t.equal(tables.trim(), '7', 'which the built code finds and checks')
  t.ok(existsSync(path.join(image, 'dist', 'schedules', 'us-routine.json')), 'and the vaccine schedules')
  const { stdout: schedules } = await run(process.execPath, ['-e', 'console.log(require("./dist/io/schedules").schedules().map(s => s.id).join())'], { cwd: image })
  t.equal(schedules.trim(), 'us-routine', 'which the built code finds and checks')
  t.notOk(existsSync(path.join(image, 'test')), 'no tests in the image')

  const copiesModules = all(final, 'COPY').map(step => split(step.args)).find(({ words }) => words[0].endsWith('/node_modules'))
  t.ok(copiesModules !== undefined, 'the final stage copies node_modules from a stage')
  const installer = stages.find(stage => stage.name === copiesModules?.flags.from)
  t.match(all(installer as Stage, 'RUN').map(step => step.args).join('\n'), /npm ci [^\n]*--omit=dev/, 'whose install leaves out the dev dependencies')
})

t.test('it runs as a non-root user and listens on 0.0.0.0:3001', async t => {
  const user = lastOf(final, 'USER')?.args.split(':')[0]
  t.ok(user !== undefined && user !== 'root' && user !== '0', `USER ${user}`)
  t.equal(user, 'node', 'the unprivileged user of the official image')
  t.same(all(final, 'EXPOSE').map(step => step.args), ['3001'], 'EXPOSE 3001')
  const config = loadConfig({ ...finalEnv, DATABASE_URL: 'postgres://u:p@db:5432/health', JWT_SECRET: 'a'.repeat(32), JWT_REFRESH_SECRET: 'b'.repeat(32) })
  t.equal(config.production, true, 'NODE_ENV=production')
  t.equal(config.host, '0.0.0.0', 'HOST=0.0.0.0')
  t.equal(config.port, 3001, 'PORT=3001')
})

t.test('the stored files live in volumes', async t => {
  const volumes = all(final, 'VOLUME').flatMap(step => split(step.args).words)
  for (const dir of ['/app/uploads', '/app/avatars', '/app/growth']) t.ok(volumes.includes(dir), `VOLUME ${dir}`)
  const config = loadConfig({ ...finalEnv, DATABASE_URL: 'postgres://u:p@db:5432/health', JWT_SECRET: 'a'.repeat(32), JWT_REFRESH_SECRET: 'b'.repeat(32) })
  for (const dir of [config.uploadDir, config.avatarDir, config.growthDataDir]) t.ok(volumes.includes(dir), `the service keeps ${dir} in a volume`)
})

t.test('its health check passes on a 200 from /api/health and fails otherwise', async t => {
  const check = healthcheck()
  t.ok(check !== null, 'there is a HEALTHCHECK')
  const { flags, words } = check ?? { flags: {}, words: [] }
  t.ok(Number.parseInt(flags.timeout ?? '30', 10) <= 10, `it gives up after ${flags.timeout}`)
  t.equal(words[0], 'node', 'it runs node (the slim image has no curl)')
  t.match(words.join(' '), /http:\/\/127\.0\.0\.1:.*\/api\/health/, 'on /api/health of the container itself')

  // A server in the service's place: what the command asks, and what it makes of each answer.
  let status = 200
  const asked: string[] = []
  const server = createServer((req, res) => {
    asked.push(`${req.method} ${req.url}`)
    res.writeHead(status, { 'content-type': 'application/json' }).end('{}')
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  t.equal(await runHealthcheck(words, port), 0, 'exit 0 on a 200')
  t.same(asked, ['GET /api/health'], 'it asked GET /api/health on the port PORT names')
  status = 503
  t.equal(await runHealthcheck(words, port), 1, 'exit 1 on a 503')
  status = 500
  t.equal(await runHealthcheck(words, port), 1, 'exit 1 on a 500')
  await new Promise(resolve => server.close(resolve))
  t.equal(await runHealthcheck(words, port), 1, 'exit 1 once nothing listens')
})
