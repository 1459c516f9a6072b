import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { request } from './api'
import { onCleanup } from './cleanup'

/** What a receiver of the run got: each POST's path, body and when it arrived (Date.now()). */
export interface Receiver {
  origin: string
  posts: Array<{ path: string, body: string, at: number }>
}

/** An HTTP server on 127.0.0.1 that answers every POST 200 after `delayMs`, closed at the end of the run. */
export async function receiver (delayMs: number): Promise<Receiver> {
  const state: Receiver = { origin: '', posts: [] }
  const server = http.createServer((req, res) => {
    const at = Date.now()
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      state.posts.push({ path: req.url ?? '', body: Buffer.concat(chunks).toString('utf8'), at })
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end('{}')
      }, delayMs)
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  state.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  onCleanup('closing a receiver', async () => {
    server.closeAllConnections()
    await new Promise<void>(resolve => server.close(() => resolve()))
  })
  return state
}

export interface Owner { token: string, familyId: number, childId: number }

/** A parent registered through the real route, owner of a family of their own, with a child. */
export async function owner (serviceUrl: string, name: string): Promise<Owner> {
  const pair = await request(serviceUrl, 'POST', '/api/auth/register', null, { email: `${name}@example.org`, password: 'bench password 1', name }) as { accessToken: string }
  const me = await request(serviceUrl, 'GET', '/api/me', pair.accessToken) as { families: Array<{ id: number }> }
  const familyId = me.families[0].id
  const child = await request(serviceUrl, 'POST', '/api/children', pair.accessToken, { name: `Kim ${name}`, dateOfBirth: '2022-01-01', sex: 'female', familyId }) as { id: number }
  return { token: pair.accessToken, familyId, childId: child.id }
}

export async function webhook (serviceUrl: string, who: Owner, url: string): Promise<void> {
  await request(serviceUrl, 'POST', `/api/families/${who.familyId}/webhooks`, who.token, { url })
}

/** A measurement written; answers when its 201 arrived (the change committed before). */
export async function change (serviceUrl: string, who: Owner, weightKg: number): Promise<{ id: number, at: number }> {
  const made = await request(serviceUrl, 'POST', `/api/children/${who.childId}/measurements`, who.token, { measuredAt: new Date().toISOString().slice(0, 10), weightKg }) as { id: number }
  return { id: made.id, at: Date.now() }
}

/**
 * A reminder that comes due at `dueAt`: a course of a medicine with a
 * 4-hour interval that reminds, its last dose given 4 hours before, and the
 * owner's ntfy topic.
 */
export async function reminderDue (serviceUrl: string, who: Owner, topicUrl: string, dueAt: number): Promise<void> {
  const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10)
  const course = await request(serviceUrl, 'POST', `/api/children/${who.childId}/medicine-courses`, who.token, {
    name: 'Ibuprofen', doseAmount: 5, doseUnit: 'ml', minIntervalHours: 4, startDate: yesterday, remind: true
  }) as { id: number }
  await request(serviceUrl, 'POST', `/api/medicine-courses/${course.id}/doses`, who.token, { givenAt: new Date(dueAt - 4 * 3_600_000).toISOString() })
  await request(serviceUrl, 'PUT', '/api/me/notifications', who.token, { channels: [{ type: 'ntfy', url: topicUrl }], quietHours: null })
}

/** Waits until `ready` holds, checking every 100 ms; fails after `ms`. */
export async function until (ready: () => boolean, ms: number, what: string): Promise<void> {
  for (const stop = Date.now() + ms; Date.now() < stop;) {
    if (ready()) return
    await new Promise(resolve => setTimeout(resolve, 100))
  }
  throw new Error(`${what} did not come within ${ms / 1000} s`)
}
