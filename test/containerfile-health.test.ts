import t from 'tap'
import { healthcheck, runHealthcheck } from './containerfile'
import { build } from './helper'

t.test('the Containerfile\'s health check asks the real health route', async t => {
  const check = healthcheck()
  t.ok(check !== null, 'there is a HEALTHCHECK')
  const words = check?.words ?? []

  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/api/health' })
  t.equal(res.statusCode, 200, 'the app answers GET /api/health')
  t.equal(res.json().status, 'ok', 'with status ok')

  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  t.equal(await runHealthcheck(words, port), 0, 'the check passes while the service answers')
  await app.close()
  t.equal(await runHealthcheck(words, port), 1, 'and fails once it is gone')
})
