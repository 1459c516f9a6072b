import t, { type Test } from 'tap'
import type { LightMyRequestResponse } from 'fastify'
import { build, call, familyOf, register, type App } from './helper'
import { OPEN } from './import-helpers'
import { listening, makeShare, payloadOf, recordedChild } from './share-helpers'

// A doctor's viewer is a page of another origin: the manifest URL and the
// file locations answer its CORS requests, whatever CORS_ORIGIN allows, and
// the other routes keep CORS_ORIGIN's rule.

const VIEWER = 'https://viewer.example'
const APP = 'https://app.example.org'

function preflight (app: App, url: string, method: string): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'OPTIONS',
    url,
    headers: { origin: VIEWER, 'access-control-request-method': method, 'access-control-request-headers': 'content-type' }
  })
}

function manifest (app: App, url: string, body: Record<string, unknown>): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'POST', url, headers: { origin: VIEWER }, payload: body })
}

function readable (t: Test, answer: LightMyRequestResponse, what: string): void {
  t.equal(answer.headers['access-control-allow-origin'], '*', `${what}: Access-Control-Allow-Origin: *`)
  t.notOk('access-control-allow-credentials' in answer.headers, `${what}: no credentials`)
}

function allowedPreflight (t: Test, answer: LightMyRequestResponse, method: string, what: string): void {
  t.equal(answer.statusCode, 204, `${what}: 204`)
  readable(t, answer, what)
  t.match(String(answer.headers['access-control-allow-methods']), new RegExp(`\\b${method}\\b`), `${what}: ${method} allowed`)
  t.match(String(answer.headers['access-control-allow-headers']), /content-type/i, `${what}: Content-Type allowed`)
  t.ok(Number(answer.headers['access-control-max-age']) > 0, `${what}: kept a while`)
}

t.test('the manifest URL and a file location answer any origin, whatever CORS_ORIGIN says', async t => {
  const app = await build(t, { env: { ...OPEN, CORS_ORIGIN: APP } })
  const origin = await listening(app)
  const owner = await register(app)
  const child = await recordedChild(app, owner, familyOf(owner))
  const locked = (await makeShare(origin, owner, child.id, { passcode: 'otter 77', sections: ['immunizations'] })).json()
  const url = new URL(payloadOf(locked.link).url).pathname

  allowedPreflight(t, await preflight(app, url, 'POST'), 'POST', 'the manifest\'s preflight')
  const served = await manifest(app, url, { recipient: 'Dr. Osei', passcode: 'otter 77', embeddedLengthMax: 0 })
  t.equal(served.statusCode, 200)
  readable(t, served, 'the manifest')
  const location = new URL(served.json().files[0].location).pathname
  allowedPreflight(t, await preflight(app, location, 'GET'), 'GET', 'the location\'s preflight')
  const file = await app.inject({ method: 'GET', url: location, headers: { origin: VIEWER } })
  t.equal(file.statusCode, 200)
  readable(t, file, 'the file')
  const used = await app.inject({ method: 'GET', url: location, headers: { origin: VIEWER } })
  t.equal(used.statusCode, 404)
  readable(t, used, 'a used location')

  const bad = await manifest(app, url, { passcode: 'otter 77' })
  t.equal(bad.statusCode, 400)
  readable(t, bad, 'a bad request')
  for (let left = 9; left >= 0; left--) {
    const wrong = await manifest(app, url, { recipient: 'Dr. Osei', passcode: `guess ${left}` })
    t.equal(wrong.statusCode, 401)
    t.equal(wrong.json().remainingAttempts, left, `${left} attempts left, at the top level`)
    readable(t, wrong, 'a wrong passcode')
  }
  const dead = await manifest(app, url, { recipient: 'Dr. Osei', passcode: 'otter 77' })
  t.equal(dead.statusCode, 404, 'the link is dead')
  readable(t, dead, 'a dead link')
  allowedPreflight(t, await preflight(app, url, 'POST'), 'POST', 'a dead link\'s preflight, as any other')
  for (const [method, elsewhere] of [['POST', `${url}/more`], ['GET', url], ['PUT', '/api/shl/']]) {
    const answer = await app.inject({ method: method as 'GET', url: elsewhere, headers: { origin: VIEWER } })
    t.equal(answer.statusCode, 404)
    t.equal(answer.json().error, 'Share link not found')
    readable(t, answer, `${method} ${elsewhere}`)
  }
})

t.test('the other routes keep CORS_ORIGIN\'s rule', async t => {
  const app = await build(t, { env: { ...OPEN, CORS_ORIGIN: APP } })
  const owner = await register(app)
  for (const url of ['/api/children', `/api/families/${familyOf(owner)}/webhooks`, '/api/me']) {
    const foreign = await preflight(app, url, 'POST')
    t.notOk(foreign.headers['access-control-allow-origin'], `${url}: a foreign origin's preflight is refused`)
    const read = await call(app, owner, 'GET', url, undefined, { origin: VIEWER })
    t.equal(read.statusCode, 200)
    t.notOk(read.headers['access-control-allow-origin'], `${url}: a foreign origin may not read the answer`)
    const own = await call(app, owner, 'GET', url, undefined, { origin: APP })
    t.equal(own.headers['access-control-allow-origin'], APP, `${url}: the configured origin may`)
  }
})
