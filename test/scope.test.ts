import t from 'tap'
import { Id, StrictObject } from '../lib/schemas'
import { scopeOf } from '../plugins/scope'
import { build, call, familyOf, register, type App } from './helper'

/** A route inside the family scope and one outside it, both reading the request's scope. */
function routes (app: App): void {
  app.get('/api/test/scoped/:id', {
    schema: { params: StrictObject({ id: Id }) },
    onRequest: app.authenticate,
    preHandler: app.familyScope({ target: { family: 'params.id' } })
  }, async request => ({ familyId: request.scope.familyId, role: request.scope.role, same: scopeOf(request) === request.scope }))
  app.get('/api/test/unscoped', async request => ({ scope: scopeOf(request) }))
  app.get('/api/test/unscoped-read', async request => ({ familyId: request.scope.familyId }))
}

t.test('the request carries what the family scope resolved, and nothing outside it', async t => {
  const app = await build(t, { routes })
  const owner = await register(app)
  const familyId = familyOf(owner)

  const scoped = await call(app, owner, 'GET', `/api/test/scoped/${familyId}`)
  t.equal(scoped.statusCode, 200)
  t.same(scoped.json(), { familyId, role: 'owner', same: true }, 'the handler reads the scope the preHandler decided')

  const unscoped = await call(app, null, 'GET', '/api/test/unscoped')
  t.same(unscoped.json(), { scope: null }, 'a route without the family scope has none')

  const misread = await call(app, null, 'GET', '/api/test/unscoped-read')
  t.equal(misread.statusCode, 500, 'reading the scope where none was decided is an error, not a null')
})
