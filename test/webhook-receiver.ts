// A real webhook receiver on 127.0.0.1, started by a test and stopped at its
// teardown. Every request's signature is checked with the Standard Webhooks
// library (standardwebhooks), as a receiver would.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'
import type { Test } from 'tap'

export interface Received {
  path: string
  id: string
  timestamp: string
  signature: string
  contentType: string
  body: string
  /** The status answered. */
  status: number
  /** Whether the signature checked out with the secret of the path. */
  verified: boolean
}

export interface Receiver {
  /** http://127.0.0.1:<port>; a webhook's URL is any path under it. */
  origin: string
  received: Received[]
  /** Requests that arrived, answered or not yet. */
  arrived: number
  /** The most requests it was answering at once. */
  peakInFlight: number
  /** What it answers: 204, 503, a redirect to /elsewhere, or 204 after `delay`. */
  mode: 'ok' | 'fail' | 'redirect'
  /** Milliseconds to wait before answering. */
  delay: number
  /** The secret of each path, to check signatures with. */
  secrets: Map<string, string>
  /** Closes the port: connections are refused until start(). */
  stop: () => Promise<void>
  /** Listens again on the same port. */
  start: () => Promise<void>
  /** The ids a path answered 2xx to, in order. */
  acknowledged: (path: string) => string[]
}

function verify (secret: string | undefined, body: string, headers: http.IncomingHttpHeaders): boolean {
  if (secret === undefined) return false
  try {
    new Webhook(secret).verify(body, {
      'webhook-id': String(headers['webhook-id']),
      'webhook-timestamp': String(headers['webhook-timestamp']),
      'webhook-signature': String(headers['webhook-signature'])
    })
    return true
  } catch {
    return false
  }
}

export async function webhookReceiver (t: Test): Promise<Receiver> {
  let server: http.Server
  let port = 0
  let inFlight = 0
  const state: Receiver = {
    origin: '',
    received: [],
    arrived: 0,
    peakInFlight: 0,
    mode: 'ok',
    delay: 0,
    secrets: new Map(),
    stop: async () => {
      server.closeAllConnections()
      await new Promise<void>(resolve => server.close(() => resolve()))
    },
    start: async () => { await listen() },
    acknowledged: path => state.received.filter(item => item.path === path && item.status >= 200 && item.status < 300).map(item => item.id)
  }
  async function listen (): Promise<void> {
    server = http.createServer((request, response) => {
      state.arrived += 1
      inFlight += 1
      state.peakInFlight = Math.max(state.peakInFlight, inFlight)
      response.on('close', () => { inFlight -= 1 })
      const chunks: Buffer[] = []
      request.on('data', (chunk: Buffer) => chunks.push(chunk))
      request.on('end', () => {
        const answer = (): void => {
          const body = Buffer.concat(chunks).toString('utf8')
          const path = request.url ?? ''
          const status = state.mode === 'ok' ? 204 : state.mode === 'fail' ? 503 : 302
          state.received.push({
            path,
            id: String(request.headers['webhook-id']),
            timestamp: String(request.headers['webhook-timestamp']),
            signature: String(request.headers['webhook-signature']),
            contentType: String(request.headers['content-type']),
            body,
            status,
            verified: verify(state.secrets.get(path), body, request.headers)
          })
          if (status === 302) response.writeHead(302, { location: '/elsewhere' })
          else response.writeHead(status, { 'content-type': 'text/plain' })
          response.end(status === 503 ? 'down for maintenance' : '')
        }
        if (state.delay > 0) setTimeout(answer, state.delay)
        else answer()
      })
    })
    await new Promise<void>(resolve => server.listen(port, '127.0.0.1', resolve))
    port = (server.address() as AddressInfo).port
    state.origin = `http://127.0.0.1:${port}`
  }
  await listen()
  t.teardown(async () => { if (server.listening) await state.stop() })
  return state
}
