import t from 'tap'
import { execFile } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { loadConfig } from '../lib/config'
import { build } from './helper'

const ROOT = path.join(__dirname, '..')
const run = promisify(execFile)

interface Instruction {
  keyword: string
  args: string
}

interface Stage {
  name: string | null
  image: string
  steps: Instruction[]
}

/** The Containerfile's instructions, with continued lines joined and comments left out. */
function parse (text: string): Stage[] {
  const joined = text.replace(/\\\n/g, ' ').split('\n').map(line => line.trim()).filter(line => line !== '' && !line.startsWith('#'))
  const stages: Stage[] = []
  for (const line of joined) {
    const [, keyword, args] = /^(\S+)\s+(.*)$/.exec(line) ?? []
    if (keyword.toUpperCase() === 'FROM') {
      const [image, , name] = args.split(/\s+/)
      stages.push({ name: name ?? null, image, steps: [] })
    } else {
      stages[stages.length - 1].steps.push({ keyword: keyword.toUpperCase(), args })
    }
  }
  return stages
}

/** Leading `--flag=value` options, then the words or the JSON array that follow. */
function split (args: string): { flags: Record<string, string>, words: string[] } {
  const flags: Record<string, string> = {}
  let rest = args
  for (let match = /^--([a-z-]+)=(\S+)\s+/.exec(rest); match !== null; match = /^--([a-z-]+)=(\S+)\s+/.exec(rest)) {
    flags[match[1]] = match[2]
    rest = rest.slice(match[0].length)
  }
  return { flags, words: rest.startsWith('[') ? JSON.parse(rest) : rest.split(/\s+/) }
}

function all (stage: Stage, keyword: string): Instruction[] {
  return stage.steps.filter(step => step.keyword === keyword)
}

function lastOf (stage: Stage, keyword: string): Instruction | undefined {
  return all(stage, keyword).at(-1)
}

/** ENV in the key=value form, possibly several on one instruction. */
function environment (stage: Stage): Record<string, string> {
  const env: Record<string, string> = {}
  for (const step of all(stage, 'ENV')) {
    for (const pair of step.args.split(/\s+/)) {
      const [key, ...value] = pair.split('=')
      env[key] = value.join('=').replace(/^"(.*)"$/, '$1')
    }
  }
  return env
}

const stages = parse(readFileSync(path.join(ROOT, 'Containerfile'), 'utf8'))
const final = stages[stages.length - 1]
const finalEnv = environment(final)
const ignored = readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split('\n').map(line => line.trim()).filter(line => line !== '' && !line.startsWith('#'))

/** A stage's /app, made by doing its COPY and RUN steps here; `npm ci` stands for the project's installed node_modules. */
async function simulate (stage: Stage, dir: string, built: Map<string, string>): Promise<void> {
  for (const step of stage.steps) {
    if (step.keyword === 'COPY') {
      const { flags, words } = split(step.args)
      const target = path.join(dir, words[words.length - 1])
      for (const source of words.slice(0, -1)) {
        const from = flags.from === undefined ? path.join(ROOT, source) : path.join(built.get(flags.from) as string, path.relative('/app', source))
        const into = words.length > 2 || target.endsWith('/') ? path.join(target, path.basename(source)) : target
        if (!existsSync(from)) throw new Error(`COPY ${step.args}: ${source} does not exist`)
        cpSync(from, into, { recursive: true, verbatimSymlinks: true })
      }
    } else if (step.keyword === 'RUN' && /\bnpm ci\b/.test(step.args)) {
      if (!existsSync(path.join(dir, 'node_modules'))) symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'))
    } else if (step.keyword === 'RUN' && /\bnpm run build\b/.test(step.args)) {
      await run('npm', ['run', 'build'], { cwd: dir })
    } else if (step.keyword === 'RUN') {
      mkdirSync(dir, { recursive: true })
    }
  }
}

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
  t.same(cmd, ['node', 'dist/server.js'], 'CMD runs the built entry point with node, in exec form')
  t.ok(existsSync(path.join(image, 'dist', 'server.js')), 'dist/server.js is in the image')
  t.ok(existsSync(path.join(image, 'dist', 'cli.js')), 'and so is the command line, dist/cli.js')
  t.ok(existsSync(path.join(image, 'dist', 'migrations', '00000000-000000-base-schema.sql')), 'and the migrations beside them')
  const cdcFiles = readFileSync(path.join(ROOT, 'growth', 'cdc', 'SHA256SUMS'), 'utf8').trim().split('\n').map(line => line.split(/\s+/)[1])
  for (const file of ['SHA256SUMS', ...cdcFiles]) t.ok(existsSync(path.join(image, 'dist', 'growth', 'cdc', file)), `and CDC's growth chart file ${file}`)
  const { stdout: tables } = await run(process.execPath, ['-e', 'console.log(Object.keys(require("./dist/lib/growth/cdc").loadCdcTables()).length)'], { cwd: image })
  t.equal(tables.trim(), '7', 'which the built code finds and checks')
  t.ok(existsSync(path.join(image, 'dist', 'schedules', 'us-routine.json')), 'and the vaccine schedules')
  const { stdout: schedules } = await run(process.execPath, ['-e', 'console.log(require("./dist/lib/schedules").schedules().map(s => s.id).join())'], { cwd: image })
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

t.test('its health check asks the real health route', async t => {
  const healthcheck = lastOf(final, 'HEALTHCHECK')
  t.ok(healthcheck !== undefined, 'there is a HEALTHCHECK')
  const { flags, words } = split(healthcheck?.args.replace(/^(.*?)CMD\s+/, '$1') ?? '')
  t.ok(Number.parseInt(flags.timeout ?? '30', 10) <= 10, `it gives up after ${flags.timeout}`)
  t.equal(words[0], 'node', 'it runs node (the slim image has no curl)')
  t.match(words.join(' '), /http:\/\/127\.0\.0\.1:.*\/api\/health/, 'on /api/health of the container itself')

  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/api/health' })
  t.equal(res.statusCode, 200, 'the app answers GET /api/health')
  t.equal(res.json().status, 'ok', 'with status ok')

  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  const check = (): Promise<number> => run(process.execPath, words.slice(1), { env: { PATH: process.env.PATH, PORT: String(port) } })
    .then(() => 0, (error: { code?: number }) => error.code ?? 1)
  t.equal(await check(), 0, 'the check passes while the service answers')
  await app.close()
  t.equal(await check(), 1, 'and fails once it is gone')
})
