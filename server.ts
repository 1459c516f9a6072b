import { buildApp } from './app'
import { ConfigError, loadConfig, type Config } from './io/config'
import { stderrPriority } from './io/log-destination'

const DRAIN_MS = 10_000
const GIVE_UP_MS = 20_000

/** A start that fails says why in one line, without a stack trace; in the journal, as an error. */
function fail (error: unknown): never {
  const message = error instanceof Error ? error.message : String(error)
  process.stderr.write(`${stderrPriority(3)}${message.split('\n')[0]}\n`)
  process.exit(1)
}

async function main (): Promise<void> {
  let config: Config
  try {
    config = loadConfig()
  } catch (error) {
    if (error instanceof ConfigError) fail(error)
    throw error
  }

  const app = await buildApp(config)
  await app.listen({ port: config.port, host: config.host })

  let closing = false
  const shutdown = (signal: string): void => {
    if (closing) return
    closing = true
    app.log.info(`${signal} received: finishing requests and shutting down`)
    setTimeout(() => app.server.closeAllConnections(), DRAIN_MS).unref()
    setTimeout(() => process.exit(1), GIVE_UP_MS).unref()
    app.close().then(() => process.exit(0), error => {
      app.log.error({ err: error }, 'shutdown failed')
      process.exit(1)
    })
  }
  process.on('SIGTERM', () => shutdown('SIGTERM'))
  process.on('SIGINT', () => shutdown('SIGINT'))
}

/** Starts the service; a start that fails says why and exits. */
export function start (): void {
  main().catch(fail)
}

// Run as a program (`npm start`); the bundle's loader, dist/server.js, calls start() itself.
if (require.main === module) start()
