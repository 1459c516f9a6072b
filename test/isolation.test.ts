import t from 'tap'
import { build, call, household } from './helper'

const OPEN = { REGISTRATION: 'open' }
const KINDS: Array<[string, Record<string, unknown>]> = [
  ['measurements', { measuredAt: '2023-05-01', weightKg: 5.5 }],
  ['visits', { date: '2023-05-01', type: 'wellness' }],
  ['medical-events', { date: '2023-05-01', type: 'vaccine', name: 'MMR' }],
  ['illnesses', { startDate: '2023-05-01' }]
]

interface Route {
  method: string
  url: string
  body?: Record<string, unknown>
  write: boolean
}

/** Every route of children and their records, aimed at a child and its records. */
function routesFor (familyId: number, childId: number, records: Record<string, number>): Route[] {
  const routes: Route[] = [
    { method: 'GET', url: `/api/children?familyId=${familyId}`, write: false },
    { method: 'POST', url: '/api/children', body: { name: 'X', dateOfBirth: '2022-01-01', sex: 'male', familyId }, write: true },
    { method: 'GET', url: `/api/children/${childId}`, write: false },
    { method: 'PUT', url: `/api/children/${childId}`, body: { name: 'X', dateOfBirth: '2022-01-01', sex: 'male' }, write: true },
    { method: 'GET', url: `/api/children/${childId}/growth`, write: false }
  ]
  for (const [kind, body] of KINDS) {
    routes.push(
      { method: 'GET', url: `/api/children/${childId}/${kind}`, write: false },
      { method: 'POST', url: `/api/children/${childId}/${kind}`, body, write: true },
      { method: 'GET', url: `/api/${kind}?childId=${childId}`, write: false },
      { method: 'POST', url: `/api/${kind}`, body: { childId, ...body }, write: true },
      { method: 'GET', url: `/api/${kind}/${records[kind]}`, write: false },
      { method: 'PUT', url: `/api/${kind}/${records[kind]}`, body, write: true },
      { method: 'DELETE', url: `/api/${kind}/${records[kind]}`, write: true }
    )
  }
  routes.push({ method: 'DELETE', url: `/api/children/${childId}`, write: true })
  return routes
}

t.test('children and records: no route leaks to another family, a viewer or no token', async t => {
  const app = await build(t, { env: OPEN })
  const { owner, familyId: family, viewer, stranger } = await household(app, { viewer: 'viewer', stranger: null })

  const child = (await call(app, owner, 'POST', '/api/children', { name: 'Kim', dateOfBirth: '2022-01-01', sex: 'female', familyId: family })).json()
  const records: Record<string, number> = {}
  const secrets: string[] = [child.name]
  for (const [kind, body] of KINDS) {
    const created = (await call(app, owner, 'POST', `/api/children/${child.id}/${kind}`, { ...body, ...(kind === 'visits' ? { notes: 'secret-visit-note' } : {}) })).json()
    records[kind] = created.id
  }
  secrets.push('secret-visit-note')
  const routes = routesFor(family, child.id, records)
  let checked = 0

  for (const route of routes) {
    const none = await call(app, null, route.method, route.url, route.body)
    t.equal(none.statusCode, 401, `no token: ${route.method} ${route.url}`)
    const foreign = await call(app, stranger, route.method, route.url, route.body)
    t.equal(foreign.statusCode, 403, `another family: ${route.method} ${route.url}`)
    t.same(foreign.json(), { error: 'Access denied', code: 'FORBIDDEN', details: {} })
    t.notOk(secrets.some(secret => foreign.body.includes(secret)), 'nothing of the family in the body')
    const byViewer = await call(app, viewer, route.method, route.url, route.body)
    t.equal(byViewer.statusCode, route.write ? 403 : 200, `viewer: ${route.method} ${route.url}`)
    checked += 3
  }

  const missing = routesFor(family, 999999, { measurements: 999999, visits: 999999, 'medical-events': 999999, illnesses: 999999 })
    .filter(route => !route.url.includes('familyId') && route.url !== '/api/children')
  for (const route of missing) {
    const res = await call(app, owner, route.method, route.url, route.body)
    t.equal(res.statusCode, 404, `not there: ${route.method} ${route.url}`)
    t.equal(res.json().code, 'NOT_FOUND')
    checked += 1
  }

  const [{ n }] = await app.sql`select count(*) as n from children`
  t.equal(n, 1, 'no refused write created a child')
  for (const [kind] of KINDS) {
    const [{ m }] = await app.sql`select count(*) as m from ${app.sql(kind.replace('-', '_'))}`
    t.equal(m, 1, `no refused write touched ${kind}`)
  }
  t.same((await call(app, stranger, 'GET', '/api/children')).json().data, [], 'a stranger\'s list is empty')

  for (const route of routes) {
    const res = await call(app, owner, route.method, route.url, route.body)
    t.ok(res.statusCode < 300, `the owner may: ${route.method} ${route.url} (${res.statusCode})`)
  }
  t.ok(checked >= 100, `${checked} refusals checked`)
})
