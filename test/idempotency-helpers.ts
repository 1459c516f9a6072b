import type { Test } from 'tap'
import net, { type AddressInfo } from 'node:net'
import type { App } from '../app'
import { bearer, build, familyOf, register, type Pair, type TestDatabase } from './helper'

// What the tests of idempotency keys share: the app listening on 127.0.0.1,
// requests sent with fetch and raw sockets.

export const OPEN = { REGISTRATION: 'open' }

export async function listening (app: App): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' })
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
}

export interface Sent {
  status: number
  headers: Headers
  text: string
  json: any
}

export async function send (origin: string, pair: Pair, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Sent> {
  const res = await fetch(origin + path, {
    method,
    headers: { ...bearer(pair.accessToken), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await res.text()
  return { status: res.status, headers: res.headers, text, json: text === '' ? null : JSON.parse(text) }
}

/** A family with a child, made through the API. */
export async function family (origin: string, app: App): Promise<{ owner: Pair, familyId: number, childId: number }> {
  const owner = await register(app)
  const familyId = familyOf(owner)
  const child = await send(origin, owner, 'POST', '/api/children', { name: 'Kim', dateOfBirth: '2022-03-01', sex: 'female', familyId })
  return { owner, familyId, childId: child.json.id }
}

export async function measurementCount (db: TestDatabase['sql'], childId: number): Promise<number> {
  const [{ n }] = await db<{ n: number }[]>`select count(*)::int as n from measurements where child_id = ${childId}`
  return n
}

export async function until (check: () => Promise<boolean>, ms = 5000): Promise<boolean> {
  for (const stop = Date.now() + ms; Date.now() < stop;) {
    if (await check()) return true
    await new Promise(resolve => setTimeout(resolve, 20))
  }
  return false
}

/** Sends a whole request on a socket and closes it at once, without reading the answer. */
export async function sendAndHangUp (origin: string, raw: string): Promise<void> {
  const { port } = new URL(origin)
  await new Promise<void>((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1', () => {
      socket.write(raw, () => { socket.destroy(); resolve() })
    })
    socket.on('error', reject)
  })
}

export async function setup (t: Test) {
  const app = await build(t, { env: OPEN })
  const origin = await listening(app)
  const { owner, familyId, childId } = await family(origin, app)
  return { app, origin, owner, familyId, childId, sql: app.db.sql }
}
