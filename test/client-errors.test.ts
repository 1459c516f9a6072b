import t, { type Test } from 'tap'
import net from 'node:net'
import { build, type App } from './helper'

// Requests that never reach a route: refused by Node's HTTP parser, too slow,
// or with a URL the router cannot take. Each is answered with the error body,
// a request id and the security headers, over a real socket (`inject` has
// none, and cleans up paths as a client would).

interface RawAnswer {
  status: number
  headers: Record<string, string>
  body: string
}

async function listening (app: App): Promise<number> {
  await app.listen({ port: 0, host: '127.0.0.1' })
  return (app.server.address() as net.AddressInfo).port
}

/** Sends text as it is and reads the answer until the server closes the connection. */
function raw (port: number, text: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    socket.on('data', chunk => chunks.push(chunk))
    socket.on('error', () => {})
    socket.on('close', () => {
      const all = Buffer.concat(chunks).toString('utf8')
      const at = all.indexOf('\r\n\r\n')
      if (at === -1) {
        reject(new Error(`no answer: ${JSON.stringify(all.slice(0, 200))}`))
        return
      }
      const [statusLine, ...lines] = all.slice(0, at).split('\r\n')
      const headers: Record<string, string> = {}
      for (const line of lines) {
        const colon = line.indexOf(':')
        headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim()
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: all.slice(at + 4) })
    })
    // The connection stays open from this side: a whole request asks the server to close it.
    socket.write(text)
  })
}

function get (port: number, path: string): Promise<RawAnswer> {
  return raw(port, `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`)
}

/** The answer is the contract's error body with the status and code, a request id and the security headers. */
function contractAnswer (t: Test, answer: RawAnswer, status: number, code: string): Record<string, any> {
  t.equal(answer.status, status, `${status} ${code}`)
  t.match(answer.headers['content-type'], /^application\/json/)
  const body = JSON.parse(answer.body)
  t.same(Object.keys(body).sort(), ['code', 'details', 'error'], 'exactly error, code and details')
  t.equal(body.code, code)
  t.type(body.error, 'string')
  t.ok(body.error.length > 0)
  t.match(answer.headers['x-request-id'], /^[A-Za-z0-9-]{1,64}$/, 'a request id')
  t.equal(answer.headers['x-content-type-options'], 'nosniff')
  t.ok(answer.headers['content-security-policy'], 'helmet\'s content security policy')
  t.ok(answer.headers['x-frame-options'])
  t.ok(answer.headers['strict-transport-security'])
  return body
}

t.test('a request whose body does not arrive within REQUEST_TIMEOUT: 408 REQUEST_TIMEOUT', async t => {
  const app = await build(t, { env: { REQUEST_TIMEOUT: '1', HEADERS_TIMEOUT: '1' } })
  t.equal(app.server.requestTimeout, 1000, 'REQUEST_TIMEOUT sets the server\'s limit')
  t.equal(app.server.headersTimeout, 1000, 'HEADERS_TIMEOUT too')
  const port = await listening(app)
  const started = Date.now()
  const answer = await raw(port, 'POST /api/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"email":')
  const waited = Date.now() - started
  const body = contractAnswer(t, answer, 408, 'REQUEST_TIMEOUT')
  t.same(body.details, {})
  t.ok(waited >= 900 && waited < 5000, `answered after about a second (${waited} ms)`)
  t.equal((await get(port, '/api/health')).status, 200, 'the service goes on')
})

t.test('headers that do not arrive within HEADERS_TIMEOUT: 408 REQUEST_TIMEOUT', async t => {
  const app = await build(t, { env: { REQUEST_TIMEOUT: '3', HEADERS_TIMEOUT: '1' } })
  const port = await listening(app)
  const started = Date.now()
  const answer = await raw(port, 'GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a')
  const waited = Date.now() - started
  contractAnswer(t, answer, 408, 'REQUEST_TIMEOUT')
  t.ok(waited >= 900 && waited < 2900, `answered after the header limit, before the request limit (${waited} ms)`)
})

t.test('a URL and headers over Node\'s limit: 431 HEADERS_TOO_LARGE', async t => {
  const app = await build(t)
  const port = await listening(app)
  const query = await get(port, `/api/health?${'q=1&'.repeat(10_000)}`)
  contractAnswer(t, query, 431, 'HEADERS_TOO_LARGE')
  t.notMatch(query.body, /q=1/, 'the query string is not echoed')
  const header = await raw(port, `GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'b'.repeat(40_000)}\r\nConnection: close\r\n\r\n`)
  contractAnswer(t, header, 431, 'HEADERS_TOO_LARGE')
})

t.test('a request that is not HTTP: 400 INVALID_BODY', async t => {
  const app = await build(t)
  const port = await listening(app)
  contractAnswer(t, await raw(port, 'HELLO THERE\r\n\r\n'), 400, 'INVALID_BODY')
  contractAnswer(t, await raw(port, 'GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n'), 400, 'INVALID_BODY')
})

t.test('a path the router cannot decode: 400 VALIDATION_ERROR naming the path', async t => {
  const app = await build(t)
  const port = await listening(app)
  for (const path of ['/api/children/%ff', '/api/children/%E0%A4%A', '/uploads/%c3%28']) {
    const body = contractAnswer(t, await get(port, path), 400, 'VALIDATION_ERROR')
    t.same(body.details.issues, [{ path: '/params', message: 'must be valid percent-encoded UTF-8' }], path)
  }
  const injected = await app.inject({ method: 'GET', url: '/api/children/%ff', headers: { 'x-request-id': 'proxy-id-7' } })
  t.equal(injected.statusCode, 400)
  t.equal(injected.headers['x-request-id'], 'proxy-id-7', 'the proxy\'s request id is kept')
})

t.test('a path parameter over the router\'s length: 414 URI_TOO_LONG, without the path', async t => {
  const app = await build(t)
  const port = await listening(app)
  const token = 'k'.repeat(5000)
  const answer = await get(port, `/api/calendar/${token}.ics`)
  const body = contractAnswer(t, answer, 414, 'URI_TOO_LONG')
  t.same(body.details, {})
  t.notMatch(answer.body, /kkkk/, 'the path is not echoed')
  contractAnswer(t, await get(port, `/api/children/${'1'.repeat(200)}`), 414, 'URI_TOO_LONG')
})

t.test('the docs page\'s files: a path that leaves their folder is 404 NOT_FOUND', async t => {
  const app = await build(t)
  const port = await listening(app)
  const css = await get(port, '/api/docs/static/index.css')
  t.equal(css.status, 200, 'the page\'s own files are served')
  for (const path of [
    '/api/docs/static/../../../../etc/passwd',
    '/api/docs/static/../../../package.json',
    '/api/docs/static/%2e%2e/%2e%2e/%2e%2e/package.json',
    '/api/docs/static/..%2f..%2f..%2fpackage.json',
    '/api/docs/static/..%5c..%5c..%5cpackage.json',
    '/api/docs/static/theme/../../../../package.json'
  ]) {
    const answer = await get(port, path)
    const body = contractAnswer(t, answer, 404, 'NOT_FOUND')
    t.equal(body.error, 'File not found', path)
    t.notMatch(answer.body, /root:|"dependencies"/, 'nothing of the file')
  }
})
