import t from 'tap'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import SwaggerParser from '@apidevtools/swagger-parser'
import { build } from './helper'

const METHODS = ['get', 'post', 'put', 'patch', 'delete']

t.test('the OpenAPI document is valid and describes every route the app has', async t => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/api/openapi.json' })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /application\/json/)
  const doc = res.json()
  t.match(doc.openapi, /^3\./)
  t.equal(doc.info.title, 'Child health records API')
  await t.resolves(SwaggerParser.validate(structuredClone(doc)), 'valid against the OpenAPI specification')

  const documented = new Set<string>()
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const method of Object.keys(item)) documented.add(`${method.toUpperCase()} ${path}`)
  }
  const registered = new Set(app.checker.routes
    .filter(route => !route.hidden && route.method !== 'HEAD' && !route.path.includes('*'))
    .map(route => `${route.method} ${route.path}`))
  t.same([...registered].filter(route => !documented.has(route)), [], 'no route is left out of the document')
  t.same([...documented].filter(route => !registered.has(route)), [], 'no documented route is missing from the app')
  t.ok(documented.size >= 60, `${documented.size} operations`)
})

t.test('every operation has what a generated client needs', async t => {
  const app = await build(t)
  const doc = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  const ids = new Set<string>()
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method]
      if (op === undefined) continue
      const name = `${method.toUpperCase()} ${path}`
      t.match(op.operationId, /^[a-z][A-Za-z0-9]+$/, `${name}: a camelCase operationId`)
      t.notOk(ids.has(op.operationId), `${name}: ${op.operationId} is unique`)
      ids.add(op.operationId)
      t.ok(Array.isArray(op.tags) && op.tags.length > 0, `${name}: a tag`)
      t.ok(typeof op.summary === 'string' && op.summary.length > 0, `${name}: a summary`)
      t.notMatch(op.summary, /\ba [aeio]/i, `${name}: "an" before a vowel in "${op.summary}"`)
      t.notMatch(op.summary, /medicalevent|MedicalEvent/i, `${name}: the words of a kind apart in "${op.summary}"`)
      t.ok(Array.isArray(op.security), `${name}: its security requirement`)
      const isPublic = op.security.length === 0
      const params = (path.match(/\{(\w+)\}/g) ?? []).map(p => p.slice(1, -1))
      for (const param of params) {
        t.ok(op.parameters?.some((p: any) => p.in === 'path' && p.name === param), `${name}: path parameter ${param}`)
      }
      if (['post', 'put', 'patch'].includes(method) && !path.endsWith('/logout')) {
        t.ok(op.requestBody !== undefined, `${name}: a request body`)
      }
      const statuses = Object.keys(op.responses)
      // The sign-in pages a browser opens answer a redirect, their success.
      t.ok(statuses.some(s => s.startsWith('2') || (s === '302' && path.startsWith('/api/auth/oidc/'))), `${name}: a success response`)
      if (!isPublic) t.ok(statuses.includes('401'), `${name}: 401 documented`)
      // Health's 503 is its own body, which carries the error fields too; so is a share link's 401, with remainingAttempts beside them.
      const ownBody = (s: string): boolean => (path === '/api/health' && s === '503') || (path === '/api/shl/{token}' && s === '401')
      for (const status of statuses.filter(s => s >= '400' && !ownBody(s))) {
        const schema = op.responses[status].content?.['application/json']?.schema
        t.equal(schema?.$ref, '#/components/schemas/Error', `${name} ${status}: the shared error body`)
      }
    }
  }
  for (const component of ['Child', 'Measurement', 'Visit', 'MedicalEvent', 'Illness', 'Family', 'User', 'TokenPair', 'ListMeta', 'Error', 'ChildList', 'MeasurementList']) {
    t.ok(doc.components.schemas[component], `${component} is a named component`)
  }
  t.ok(doc.components.securitySchemes.bearer)
  t.same(doc.paths['/api/health'].get.security, [], 'health is public')
})

t.test('the response check catches a response that strays from the document', async t => {
  const app = await build(t)
  await app.inject({ method: 'GET', url: '/api/health' })
  const before = app.checker.mismatches.length
  app.checker.check(app, 'GET', '/api/health', 200, 'application/json', JSON.stringify({ status: 'ok' }))
  app.checker.check(app, 'GET', '/api/health', 418, 'application/json', '{}')
  app.checker.check(app, 'GET', '/api/nowhere', 200, 'application/json', '{}')
  app.checker.check(app, 'GET', undefined, 404, 'application/json', JSON.stringify({ error: 'x' }))
  const found = app.checker.mismatches.splice(before)
  t.equal(found.length, 4, 'each stray response is caught')
  t.match(found[0], /GET \/api\/health 200: .*required property/)
  t.match(found[1], /status is not documented/)
  t.match(found[2], /not in the document/)
  t.match(found[3], /required property/)
})

t.test('the visit date and the visitId fields say their rules', async t => {
  const app = await build(t)
  const doc = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  const bodyOf = (path: string, method: string): any => doc.paths[path][method].requestBody.content['application/json'].schema
  for (const [path, method] of [['/api/children/{childId}/visits', 'post'], ['/api/visits/{id}', 'put'], ['/api/visits/{id}', 'patch']]) {
    const date = bodyOf(path, method).properties.date
    t.match(date.description, /at most 730 days ahead/, `${method} ${path}: how far ahead a visit may lie`)
    t.match(date.description, /takes no measurement/, `${method} ${path}: a visit ahead takes no measurement`)
    t.match(date.description, /linked record would come before it/, `${method} ${path}: a date change that would leave a linked record before the visit`)
  }
  t.match(JSON.stringify(bodyOf('/api/children/{childId}/visits', 'post').properties.measurement), /not with a visit after today/, 'a visit ahead takes no measurement')
  for (const [path, own] of [['measurements', 'measuredAt'], ['medical-events', 'date'], ['illnesses', 'endDate \\(today while it is not set\\)']]) {
    for (const [url, method] of [[`/api/children/{childId}/${path}`, 'post'], [`/api/${path}/{id}`, 'put'], [`/api/${path}/{id}`, 'patch']]) {
      t.match(bodyOf(url, method).properties.visitId.description, new RegExp(`on or before this record's ${own}: a visit ahead`), `${method} ${url}: visitId's rule`)
    }
  }
})

t.test('the docs page works without the internet', async t => {
  const app = await build(t)
  const page = await app.inject({ method: 'GET', url: '/api/docs' })
  t.equal(page.statusCode, 200)
  t.match(page.headers['content-type'], /text\/html/)
  t.notMatch(page.body, /https?:\/\/(?!127\.0\.0\.1|localhost)/, 'no asset from elsewhere')
  const scripts = [...page.body.matchAll(/src="([^"]+)"/g)].map(match => match[1])
  t.ok(scripts.length > 0)
  for (const src of scripts) {
    const url = new URL(src, 'http://127.0.0.1/api/docs/').pathname
    t.equal((await app.inject({ method: 'GET', url })).statusCode, 200, `${url} is served by the service`)
  }
  const init = await app.inject({ method: 'GET', url: '/api/docs/static/swagger-initializer.js' })
  t.equal(init.statusCode, 200)
})

t.test('the document passes redocly lint with its recommended rules', async t => {
  const app = await build(t)
  const doc = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  t.same(doc.servers, [{ url: '/', description: 'The server that serves this document' }], 'a relative server, so clients need no base URL')
  const dir = mkdtempSync(path.join(os.tmpdir(), 'child-health-lint-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = path.join(dir, 'openapi.json')
  writeFileSync(file, JSON.stringify(doc))
  const cli = require.resolve('@redocly/cli/bin/cli.js')
  const { stdout } = await promisify(execFile)(process.execPath, [cli, 'lint', file, '--format=json'], {
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    maxBuffer: 64 * 1024 * 1024
  }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }))
  const report = JSON.parse(stdout) as { totals: { errors: number }, problems: Array<{ severity: string, ruleId: string, message: string }> }
  const errors = report.problems.filter(problem => problem.severity === 'error').map(problem => `${problem.ruleId}: ${problem.message}`)
  t.same(errors, [], 'no error')
  t.equal(report.totals.errors, 0)

  // The rule behind the extension keyword still holds.
  t.match(JSON.stringify(doc.paths), /"x-max-decimals":3/, 'weightKg documents its 3 decimals')
})
