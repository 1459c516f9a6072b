import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import type { Test } from 'tap'

/** The folder of the service's entry points. */
export const ROOT = path.join(__dirname, '..')

/** What a process wrote, and its exit code (null until it has exited). */
export interface Run {
  code: number | null
  stdout: string
  stderr: string
}

/**
 * Starts an entry point of the service (`server.ts`, `cli.ts`) in a process
 * of its own with exactly the given environment. `input` is written to its
 * standard input, which is then closed; null closes it unwritten; without
 * it the process has no standard input at all.
 */
export function startNode (entry: string, args: string[], env: Record<string, string>, input?: string | null): { child: ChildProcess, run: Run, exited: Promise<Run> } {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, entry), ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe']
  })
  const run: Run = { code: null, stdout: '', stderr: '' }
  child.stdout?.on('data', chunk => { run.stdout += chunk })
  child.stderr?.on('data', chunk => { run.stderr += chunk })
  if (child.stdin !== null) {
    // A command that refuses early may close its input before all of it is written.
    child.stdin.on('error', () => {})
    if (input === null) child.stdin.destroy()
    else child.stdin.end(input)
  }
  const exited = new Promise<Run>(resolve => child.on('exit', code => { run.code = code; resolve(run) }))
  return { child, run, exited }
}

/** Runs the command line to its end; `input` as for `startNode`. */
export function cli (args: string[], env: Record<string, string>, input?: string | null): Promise<Run> {
  return startNode('cli.ts', args, env, input).exited
}

/** The run exited with code 0. */
export function succeeds (t: Test, run: Run, what: string): void {
  t.equal(run.code, 0, what, { stderr: run.stderr })
}

/** Whether the service at `base` answers GET /api/health with 200 within `ms`. */
export async function healthy (base: string, ms = 30_000): Promise<boolean> {
  for (const started = Date.now(); Date.now() - started < ms;) {
    try {
      if ((await fetch(`${base}/api/health`)).status === 200) return true
    } catch {}
    await new Promise(resolve => setTimeout(resolve, 100))
  }
  return false
}

/** Waits until the service at `base` answers its health; how long that took, in milliseconds. */
export async function waitForHealth (base: string, ms = 30_000): Promise<number> {
  const started = Date.now()
  if (!(await healthy(base, ms))) throw new Error(`the server did not answer ${base}/api/health within ${ms / 1000} s`)
  return Date.now() - started
}
