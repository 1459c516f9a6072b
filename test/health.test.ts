import t from 'tap'
import { build } from './helper'

t.test('health answers ok while the database is up', async t => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/api/health' })
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.same(Object.keys(body).sort(), ['database', 'status', 'uptimeSeconds', 'version'])
  t.equal(body.status, 'ok')
  t.equal(body.database, 'ok')
  t.equal(typeof body.version, 'string')
  t.ok(Number.isInteger(body.uptimeSeconds))
})
