/**
 * What the run started, stopped in reverse order at the end, on a failure and
 * on Ctrl-C. Each step is bounded in time, so a stuck process cannot hold the run.
 */

type Step = { name: string, run: () => Promise<void> }

const steps: Step[] = []
let running: Promise<void> | null = null

export function onCleanup (name: string, run: () => Promise<void>): void {
  steps.push({ name, run })
}

function bounded (step: Step, ms: number): Promise<void> {
  return new Promise(resolve => {
    const timer = setTimeout(() => {
      process.stderr.write(`cleanup: ${step.name} did not finish in ${ms / 1000} s\n`)
      resolve()
    }, ms)
    step.run().catch(error => {
      process.stderr.write(`cleanup: ${step.name}: ${error instanceof Error ? error.message : String(error)}\n`)
    }).finally(() => {
      clearTimeout(timer)
      resolve()
    })
  })
}

export function cleanup (): Promise<void> {
  running ??= (async () => {
    while (steps.length > 0) await bounded(steps.pop() as Step, 20_000)
  })()
  return running
}

/**
 * Runs a benchmark's `main`: on Ctrl-C or SIGTERM, and when it ends or fails,
 * what it started is stopped before the process exits (0, 1 on a failure,
 * 130 when interrupted).
 */
export function runBenchmark (main: () => Promise<void>): void {
  let interrupted = false
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (interrupted) return
      interrupted = true
      process.stderr.write(`\n${signal}: stopping what the run started\n`)
      cleanup().finally(() => process.exit(130))
    })
  }
  main().then(async () => {
    await cleanup()
    process.exit(0)
  }, async error => {
    process.stderr.write(`\nThe benchmark failed: ${error instanceof Error ? error.message : String(error)}\n`)
    await cleanup()
    process.exit(1)
  })
}
