import { loadConfig } from '../io/config'

/**
 * Waits until the service started with the same settings answers
 * GET /api/health with 200, which it does once it listens and has migrated.
 * systemd runs it as ExecStartPost, so the unit is reported started only then.
 */
const INTERVAL_MS = 500

function address (host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1'
  if (host === '::') return '[::1]'
  return host.includes(':') ? `[${host}]` : host
}

async function healthy (url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(5000) })
    return res.status === 200
  } catch {
    return false
  }
}

async function main (): Promise<void> {
  const { host, port } = loadConfig()
  const url = `http://${address(host)}:${port}/api/health`
  while (!(await healthy(url))) await new Promise(resolve => setTimeout(resolve, INTERVAL_MS))
}

main().catch(error => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`)
  process.exit(1)
})
