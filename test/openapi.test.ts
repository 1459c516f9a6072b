import t from 'tap'
import { build } from './helper'

t.test('the OpenAPI document is served and documents the routes by their schemas', async t => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/api/openapi.json' })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /application\/json/)
  const doc = res.json()
  t.match(doc.openapi, /^3\./)
  t.equal(doc.info.title, 'Child health records API')
  t.ok(doc.components.securitySchemes.bearer)
  t.ok(doc.components.schemas.Error, 'the error body is a named component')
  const health = doc.paths['/api/health'].get
  t.equal(health.operationId, 'getHealth')
  t.same(health.security, [], 'health is public')
  t.ok(health.responses['200'])
  t.ok(health.responses['503'])
  t.equal(doc.paths['/api/openapi.json'].get.operationId, 'getOpenApiDocument')
})
