import t, { type Test } from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, utimesSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import Fastify from 'fastify'
import {
  chooseLogOutput, journalPriority, journalStream, lineLevel, logDestination, prettyStream, stderrPriority
} from '../io/log-destination'
import { build, tempDir, TEST_ENV, testDatabase } from './helper'
import { freePort } from '../db/embedded'

const ROOT = path.join(__dirname, '..')
const LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 } as const
const PRIORITIES = { trace: 7, debug: 7, info: 6, warn: 4, error: 3, fatal: 2 } as const
/** The sd-daemon priority of each pino level, as the issue gives it. */
const PRIORITY_OF_LEVEL: Record<number, number> = { 10: 7, 20: 7, 30: 6, 40: 4, 50: 3, 60: 2 }

function sink (): { lines: string[], write: (line: string) => void } {
  const lines: string[] = []
  return { lines, write: line => { lines.push(line) } }
}

t.test('each of the six pino levels gets its journald priority', async t => {
  for (const [name, level] of Object.entries(LEVELS)) {
    t.equal(journalPriority(level), PRIORITIES[name as keyof typeof LEVELS], name)
  }
  const out = sink()
  const stream = journalStream(out)
  for (const level of Object.values(LEVELS)) stream.write(`{"level":${level},"time":1,"msg":"m"}\n`)
  t.same(out.lines, Object.entries(LEVELS).map(([name, level]) => `<${PRIORITIES[name as keyof typeof LEVELS]}>{"level":${level},"time":1,"msg":"m"}\n`),
    'the prefix, then the line unchanged')
})

t.test('the level is read from the start of the line only', async t => {
  t.equal(lineLevel('{"level":50,"msg":"{\\"level\\":30"}'), 50)
  t.equal(lineLevel('{"level":"warn","msg":"m"}'), undefined, 'a level label is no number')
  t.equal(lineLevel('{"msg":"m","level":50}'), undefined, 'a level elsewhere is not looked for')
  t.equal(lineLevel('plain text'), undefined)
  const out = sink()
  const stream = journalStream(out)
  stream.write('plain text\n')
  stream.write('{"level":40,"msg":"a"}\n{"level":60,"msg":"b"}\n')
  t.same(out.lines, ['<6>plain text\n', '<4>{"level":40,"msg":"a"}\n<2>{"level":60,"msg":"b"}\n'],
    'a line without a level is info; several lines in one write each get their prefix')
})

t.test('the lines of a real pino logger, through the wrapper', async t => {
  const out = sink()
  const app = Fastify({ logger: { level: 'trace', stream: journalStream(out) } })
  for (const name of Object.keys(LEVELS) as (keyof typeof LEVELS)[]) app.log[name](`a ${name} line`)
  await app.close()
  const ours = out.lines.filter(line => / line"/.test(line))
  t.equal(ours.length, 6)
  for (const line of ours) {
    const [, priority, json] = /^<(\d)>(\{.*\})\n$/.exec(line) ?? []
    t.ok(json !== undefined, `prefixed: ${line.slice(0, 40)}`)
    const { level, msg } = JSON.parse(json)
    t.equal(Number(priority), PRIORITY_OF_LEVEL[level], msg)
  }
})

t.test('the destination: journal, readable lines or JSON', async t => {
  for (const production of [false, true]) {
    for (const isTTY of [false, true]) {
      for (const journal of [undefined, '', '8:1234']) {
        const expected = journal === '8:1234' && !isTTY ? 'journal' : !production && isTTY ? 'pretty' : 'json'
        t.equal(chooseLogOutput({ production, isTTY, journalStream: journal }), expected,
          `${production ? 'production' : 'development'}, ${isTTY ? 'terminal' : 'no terminal'}, JOURNAL_STREAM ${journal ?? 'unset'}`)
      }
    }
  }
  t.equal(chooseLogOutput({ production: false, isTTY: undefined, journalStream: undefined }), 'json', 'a stdout without isTTY is no terminal')

  const pipe = { ...sink(), isTTY: false }
  const { stream } = logDestination(true, { JOURNAL_STREAM: '8:1234' }, pipe)
  stream?.write('{"level":40,"msg":"w"}\n')
  t.same(pipe.lines, ['<4>{"level":40,"msg":"w"}\n'], 'under the journal, prefixed lines on stdout')
  t.same(logDestination(true, {}, pipe), {}, 'otherwise pino\'s own JSON on stdout')
  t.same(logDestination(true, {}, { ...sink(), isTTY: true }), {}, 'also on a terminal in production')
  t.ok(logDestination(false, {}, { ...sink(), isTTY: true }).stream !== undefined, 'pino-pretty in development on a terminal')
})

t.test('pino-pretty is optional', async t => {
  const missing = Object.assign(new Error('Cannot find module \'pino-pretty\''), { code: 'MODULE_NOT_FOUND' })
  t.equal(prettyStream(() => { throw missing }), undefined, 'missing: JSON instead, without a word')
  t.throws(() => prettyStream(() => { throw new Error('broken') }), /broken/, 'another failure is not hidden')
  let given: Record<string, unknown> = {}
  const stream = prettyStream(() => (options: Record<string, unknown>) => { given = options; return sink() })
  t.ok(stream !== undefined)
  t.match(given, { colorize: true, translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname', sync: true })
  t.equal(typeof prettyStream()?.write, 'function', 'the installed package gives a stream')
})

t.test('the entry points\' own lines on stderr', async t => {
  t.equal(stderrPriority(3, { JOURNAL_STREAM: '8:1234' }, { isTTY: false }), '<3>')
  t.equal(stderrPriority(4, { JOURNAL_STREAM: '8:1234' }, { isTTY: false }), '<4>')
  t.equal(stderrPriority(3, {}, { isTTY: false }), '', 'not under the journal')
  t.equal(stderrPriority(3, { JOURNAL_STREAM: '8:1234' }, { isTTY: true }), '', 'nor on a terminal')
})

t.test('production logs no warning for requests a client got wrong', async t => {
  const files = tempDir(t, 'child-health-log-')
  const logs: string[] = []
  // An empty LOG_LEVEL is unset: the production default.
  const app = await build(t, {
    logs,
    env: {
      NODE_ENV: 'production', BCRYPT_COST: '10', LOG_LEVEL: '', REGISTRATION: 'open', AUTH_RATE_LIMIT_MAX: '2',
      UPLOAD_DIR: path.join(files, 'uploads'), AVATAR_DIR: path.join(files, 'avatars')
    }
  })
  t.equal(app.log.level, 'warn', 'production logs warnings by default')
  const statuses = [
    (await app.inject({ method: 'GET', url: '/api/no-such-route' })).statusCode,
    (await app.inject({ method: 'GET', url: '/api/me' })).statusCode,
    (await app.inject({ method: 'POST', url: '/api/auth/register', payload: { email: 'not an address' } })).statusCode
  ]
  for (let i = 0; i < 3; i++) {
    statuses.push((await app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'a@example.org', password: 'wrong password' } })).statusCode)
  }
  statuses.push((await app.inject({ method: 'GET', url: '/api/health' })).statusCode)
  t.same(statuses, [404, 401, 400, 401, 401, 429, 200])
  t.same(logs, [], 'nothing logged')
  app.log.warn('a warning')
  t.equal(logs.length, 1, 'while a warning is')
})

interface Server {
  stdout: string
  stderr: string
  code: number | null
}

/** Starts the real entry point, asks for its health, waits for `until` in its output, and stops it with SIGTERM. */
async function runServer (t: Test, command: string[], env: Record<string, string>, port: number, until: (stdout: string) => boolean): Promise<Server> {
  const child = spawn(command[0], command.slice(1), { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { child.kill('SIGKILL') })
  const run: Server = { stdout: '', stderr: '', code: null }
  child.stdout.on('data', chunk => { run.stdout += chunk })
  child.stderr.on('data', chunk => { run.stderr += chunk })
  const exited = new Promise<Server>(resolve => child.on('exit', code => { run.code = code; resolve(run) }))
  let healthy = false
  for (let waited = 0; waited < 30000 && !(healthy && until(run.stdout)) && run.code === null; waited += 100) {
    if (!healthy) {
      try {
        healthy = (await fetch(`http://127.0.0.1:${port}/api/health`)).status === 200
      } catch {}
    }
    await new Promise(resolve => setTimeout(resolve, 100))
  }
  t.ok(healthy, 'the server answered')
  t.ok(until(run.stdout), 'and logged what was awaited')
  // The server's pid: the command may be a wrapper that prints it first.
  const pid = /^PID (\d+)/m.exec(run.stdout)?.[1]
  process.kill(pid === undefined ? child.pid! : Number(pid), 'SIGTERM')
  return exited
}

/** A server whose start logs warnings: an orphaned upload to sweep, and growth tables that cannot be downloaded. */
async function serverEnv (t: Test): Promise<{ env: Record<string, string>, port: number }> {
  const db = await testDatabase(t)
  const dir = tempDir(t, 'child-health-log-')
  const uploads = path.join(dir, 'uploads')
  mkdirSync(uploads)
  const orphan = path.join(uploads, `${'a'.repeat(32)}.pdf`)
  writeFileSync(orphan, 'left behind')
  const old = new Date(Date.now() - 2 * 60 * 60 * 1000)
  utimesSync(orphan, old, old)
  mkdirSync(path.join(dir, 'growth'))
  const port = await freePort()
  return {
    port,
    env: {
      ...TEST_ENV,
      NODE_ENV: 'production',
      BCRYPT_COST: '10',
      LOG_LEVEL: 'info',
      DATABASE_URL: db.url,
      DATA_DIR: dir,
      UPLOAD_DIR: uploads,
      AVATAR_DIR: path.join(dir, 'avatars'),
      GROWTH_DATA_DIR: path.join(dir, 'growth'),
      GROWTH_DATA_URL: `http://127.0.0.1:${await freePort()}/`,
      PORT: String(port)
    }
  }
}

const SERVER = [process.execPath, '--import', 'tsx', path.join(ROOT, 'server.ts')]
const WARNED = (stdout: string) => stdout.includes('removed files left without their rows') && stdout.includes('growth routes answer 503 until')

t.test('under systemd, every line the server writes starts with its journald priority', async t => {
  const { env, port } = await serverEnv(t)
  const run = await runServer(t, SERVER, { ...env, JOURNAL_STREAM: '8:1234' }, port, WARNED)
  t.equal(run.code, 0, 'SIGTERM stops it cleanly')
  const lines = run.stdout.split('\n').filter(line => line !== '')
  t.ok(lines.length >= 5, `${lines.length} lines`)
  const seen = new Set<number>()
  for (const line of lines) {
    const [, priority, json] = /^<(\d)>(\{.*\})$/.exec(line) ?? []
    if (json === undefined) {
      t.fail(`a line without its prefix: ${line}`)
      continue
    }
    const { level, msg } = JSON.parse(json)
    t.equal(Number(priority), PRIORITY_OF_LEVEL[level], `<${priority}> ${msg}`)
    seen.add(Number(priority))
  }
  t.ok(seen.has(6), 'info lines are <6>')
  t.ok(seen.has(4), 'warnings are <4>')
  const warnings = lines.filter(line => line.startsWith('<4>')).map(line => JSON.parse(line.slice(3)).msg)
  t.ok(warnings.includes('removed files left without their rows'), 'the sweep that removed an orphan warns')
  t.ok(warnings.some(msg => /^growth table .* not downloaded/.test(msg)), 'a failed growth download warns')
})

t.test('elsewhere the server writes plain JSON lines', async t => {
  const { env, port } = await serverEnv(t)
  const run = await runServer(t, SERVER, env, port, WARNED)
  t.equal(run.code, 0)
  const lines = run.stdout.split('\n').filter(line => line !== '')
  t.ok(lines.length >= 5, `${lines.length} lines`)
  for (const line of lines) t.ok(line.startsWith('{') && typeof JSON.parse(line).level === 'number', line.slice(0, 60))
})

t.test('a failed start is an error in the journal', async t => {
  const bad = { ...TEST_ENV, NODE_ENV: 'production', BCRYPT_COST: '10', DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', JWT_SECRET: 'short', PATH: process.env.PATH ?? '' }
  const journal = spawnSync(SERVER[0], SERVER.slice(1), { cwd: ROOT, env: { ...bad, JOURNAL_STREAM: '8:1234' }, encoding: 'utf8' })
  t.match(journal.stderr, /^<3>Invalid configuration: JWT_SECRET /)
  const plain = spawnSync(SERVER[0], SERVER.slice(1), { cwd: ROOT, env: bad, encoding: 'utf8' })
  t.match(plain.stderr, /^Invalid configuration: JWT_SECRET /)
})

t.test('in development on a terminal the server writes readable lines', async t => {
  // script(1) gives the server a terminal; it comes with util-linux on every Debian.
  t.equal(spawnSync('script', ['--version']).status, 0, 'script(1) is installed')
  const { env, port } = await serverEnv(t)
  const command = `echo PID $$; exec ${SERVER.map(word => `'${word}'`).join(' ')}`
  const run = await runServer(t, ['script', '-qefc', command, '/dev/null'], { ...env, NODE_ENV: 'development' }, port,
    stdout => stdout.includes('Server listening'))
  t.equal(run.code, 0)
  const lines = run.stdout.split(/\r?\n/).filter(line => line !== '' && !line.startsWith('PID '))
  t.ok(lines.length >= 2, `${lines.length} lines`)
  t.notOk(lines.some(line => line.startsWith('{') || line.startsWith('<')), 'no JSON')
  t.match(run.stdout, /\[\d\d:\d\d:\d\d\] .*INFO.*Server listening/, 'a time, a level and the message')
})
