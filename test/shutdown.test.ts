import t from 'tap'
import { build, type App } from './helper'

function routes (app: App): void {
  app.get('/api/test/slow', async () => {
    await new Promise(resolve => setTimeout(resolve, 1000))
    const [{ ok }] = await app.sql`select true as ok`
    return { ok }
  })
}

t.test('closing lets a request in flight finish, then closes the pool', async t => {
  const app = await build(t, { routes })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  const inFlight = fetch(`http://127.0.0.1:${port}/api/test/slow`)
  await new Promise(resolve => setTimeout(resolve, 200))
  const closed = app.close()
  const res = await inFlight
  t.equal(res.status, 200, 'the request in flight is answered')
  t.same(await res.json(), { ok: true }, 'with the database still there')
  await closed
  await t.rejects(fetch(`http://127.0.0.1:${port}/api/health`), 'no longer accepting connections')
  await t.rejects(app.sql`select 1`, 'the pool is closed')
})
