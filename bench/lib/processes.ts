import { spawn, type ChildProcess } from 'node:child_process'
import { onCleanup } from './cleanup'

/** A process of the run (the service or a floor), with the tail of its output for a failure report. */
export interface Running {
  name: string
  child: ChildProcess
  tail: () => string
  exited: Promise<number | null>
}

const TAIL_LINES = 40
const STOP_GRACE_MS = 15_000

/** Starts Node with `args`; with `nice`, through nice(1) at that niceness, so that every thread of the process has it. */
export function startProcess (name: string, args: string[], env: Record<string, string>, cwd: string, options: { nice?: number } = {}): Running {
  const [command, commandArgs] = options.nice === undefined
    ? [process.execPath, args]
    : ['nice', ['-n', String(options.nice), process.execPath, ...args]]
  const child = spawn(command, commandArgs, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
  const lines: string[] = []
  const keep = (chunk: Buffer): void => {
    lines.push(...chunk.toString('utf8').split('\n').filter(Boolean))
    lines.splice(0, Math.max(0, lines.length - TAIL_LINES))
  }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  const exited = new Promise<number | null>(resolve => child.once('exit', code => resolve(code)))
  const running: Running = { name, child, tail: () => lines.join('\n'), exited }
  onCleanup(`stopping ${name}`, () => stopProcess(running))
  return running
}

export async function stopProcess (running: Running): Promise<void> {
  const { child } = running
  if (child.exitCode !== null || child.signalCode !== null) return
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS)
  await running.exited
  clearTimeout(timer)
}

function failure (running: Running, problem: string): Error {
  return new Error(`${running.name} ${problem}\n--- its last output ---\n${running.tail()}`)
}

/** Waits until `url` answers 2xx, asking every `intervalMs`; fails when the process exits first or the time is up. */
export async function waitForHttp (running: Running, url: string, timeoutMs = 60_000, intervalMs = 200): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let gone = false
  void running.exited.then(() => { gone = true })
  while (Date.now() < deadline) {
    if (gone) throw failure(running, `exited with code ${running.child.exitCode}`)
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) })
      await res.arrayBuffer()
      if (res.ok) return
    } catch {}
    await new Promise(resolve => setTimeout(resolve, intervalMs))
  }
  throw failure(running, `did not answer ${url} within ${timeoutMs / 1000} s`)
}

/** A floor prints `{"port":N}` once it listens on a port of its own. */
export function announcedPort (running: Running, timeoutMs = 30_000): Promise<number> {
  return new Promise((resolve, reject) => {
    let buffered = ''
    const timer = setTimeout(() => reject(failure(running, `announced no port within ${timeoutMs / 1000} s`)), timeoutMs)
    const onData = (chunk: Buffer): void => {
      buffered += chunk.toString('utf8')
      const match = /\{"port":(\d+)\}/.exec(buffered)
      if (match === null) return
      clearTimeout(timer)
      running.child.stdout?.off('data', onData)
      resolve(Number(match[1]))
    }
    running.child.stdout?.on('data', onData)
    void running.exited.then(() => {
      clearTimeout(timer)
      reject(failure(running, `exited with code ${running.child.exitCode} before listening`))
    })
  })
}
