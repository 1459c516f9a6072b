'use strict'

/**
 * The bare Fastify floor of a start: a Fastify app with one route, in plain
 * JavaScript as the built service runs, listening on PORT on loopback. What
 * Fastify alone takes to start and holds in memory.
 */
const Fastify = require('fastify')

const app = Fastify({ logger: false })
app.get('/api/health', async () => ({ status: 'ok' }))
app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) }).catch(error => {
  process.stderr.write(`${error.stack}\n`)
  process.exit(1)
})
