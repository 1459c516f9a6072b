import Fastify, { type FastifyInstance } from 'fastify'
import { namedSchemas } from '../../routes/schemas'

/** A bare Fastify app that knows the service's named response schemas, and nothing else of it. */
export function bareApp (): FastifyInstance {
  const app = Fastify({ logger: false })
  for (const schema of namedSchemas) app.addSchema(schema)
  return app
}

/** Listens on a port of its own on loopback, says which on stdout, and closes on SIGTERM or SIGINT. */
export async function serve (app: FastifyInstance, onClose: () => Promise<void> = async () => {}): Promise<void> {
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  process.stdout.write(JSON.stringify({ port }) + '\n')
  const stop = (): void => {
    app.close().then(onClose).finally(() => process.exit(0))
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
}
