import t, { type Test } from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import net, { type AddressInfo } from 'node:net'
import { buildApp, type App } from '../app'
import { bearer, build, readBlocks, testConfig, transactionsSettled, PASSWORD, type Pair } from './helper'

// Live updates over real HTTP: streams read with fetch as a browser would,
// writes made through the API, on one or two instances of the service.

const OPEN = { REGISTRATION: 'open' }

interface SseEvent {
  event: string
  id: string
  data: any
}

interface Stream {
  status: number
  headers: Headers
  /** The error body of a refused stream. */
  body: any
  events: SseEvent[]
  comments: string[]
  /** True once the server ended the stream. */
  ended: boolean
  /** Resolves when the server ends the stream (or it is closed here). */
  done: Promise<void>
  close: () => void
}

async function listening (app: App): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' })
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
}

/** Opens an event stream and reads it in the background. */
async function connect (origin: string, path: string, headers: Record<string, string> = {}): Promise<Stream> {
  const abort = new AbortController()
  const res = await fetch(origin + path, { headers, signal: abort.signal })
  const stream: Stream = {
    status: res.status,
    headers: res.headers,
    body: null,
    events: [],
    comments: [],
    ended: false,
    done: Promise.resolve(),
    close: () => abort.abort()
  }
  if (res.status !== 200) {
    stream.body = await res.json()
    stream.ended = true
    return stream
  }
  stream.done = readBlocks(res.body as ReadableStream<Uint8Array>, block => {
    const fields: Record<string, string> = {}
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) {
        stream.comments.push(line.slice(1).trim())
        continue
      }
      const colon = line.indexOf(':')
      fields[line.slice(0, colon)] = line.slice(colon + 1).replace(/^ /, '')
    }
    if (fields.data !== undefined) stream.events.push({ event: fields.event, id: fields.id, data: JSON.parse(fields.data) })
  }).then(() => { stream.ended = true }, () => {})
  return stream
}

async function until (check: () => boolean, ms = 2000): Promise<boolean> {
  for (const stop = Date.now() + ms; Date.now() < stop;) {
    if (check()) return true
    await new Promise(resolve => setTimeout(resolve, 10))
  }
  return check()
}

/** Waits for the stream's `count`-th event; answers the events so far. */
async function events (stream: Stream, count: number, ms = 2000): Promise<SseEvent[]> {
  await until(() => stream.events.length >= count || stream.ended, ms)
  return stream.events
}

async function ends (stream: Stream, ms = 1000): Promise<boolean> {
  return until(() => stream.ended, ms)
}

class Client {
  constructor (readonly origin: string) {}

  async call (method: string, path: string, token: string | null, body?: unknown): Promise<{ status: number, body: any, headers: Headers }> {
    const res = await fetch(this.origin + path, {
      method,
      headers: { ...(token === null ? {} : bearer(token)), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body)
    })
    const text = await res.text()
    return { status: res.status, body: text === '' ? null : JSON.parse(text), headers: res.headers }
  }

  async ok (method: string, path: string, token: string | null, body?: unknown): Promise<any> {
    const res = await this.call(method, path, token, body)
    if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(res.body)}`)
    return res.body
  }

  async register (extra: Record<string, unknown> = {}): Promise<Pair & { familyId: number }> {
    const email = `sse-${randomBytes(4).toString('hex')}@example.org`
    const pair: Pair = await this.ok('POST', '/api/auth/register', null, { email, password: PASSWORD, name: 'Parent', ...extra })
    const me = await this.ok('GET', '/api/me', pair.accessToken)
    return { ...pair, familyId: me.families[0]?.id }
  }

  /** A new user who joins the family with the role, through an invite. */
  async join (owner: Pair & { familyId: number }, role: 'member' | 'viewer'): Promise<Pair & { familyId: number }> {
    const email = `joined-${randomBytes(4).toString('hex')}@example.org`
    const invite = await this.ok('POST', `/api/families/${owner.familyId}/invites`, owner.accessToken, { email, role })
    return this.register({ email, inviteToken: invite.token })
  }

  async child (pair: Pair, familyId: number): Promise<number> {
    return (await this.ok('POST', '/api/children', pair.accessToken, { name: 'Kim', dateOfBirth: '2021-06-01', sex: 'female', familyId })).id
  }

  async measurement (pair: Pair, childId: number, weightKg = 9): Promise<number> {
    return (await this.ok('POST', `/api/children/${childId}/measurements`, pair.accessToken, { measuredAt: '2022-01-01', weightKg })).id
  }

  stream (familyId: number, token: string | null, query = '', headers: Record<string, string> = {}): Promise<Stream> {
    return connect(this.origin, `/api/families/${familyId}/events${query}`, { ...(token === null ? {} : bearer(token)), ...headers })
  }
}

async function setup (t: Test, env: Record<string, string> = {}, logs?: string[]) {
  const app = await build(t, { env: { ...OPEN, ...env }, logs })
  const api = new Client(await listening(app))
  await api.register() // the admin
  const owner = await api.register()
  const opened: Stream[] = []
  t.teardown(() => { for (const stream of opened) stream.close() })
  // A stream starts after the changes the feed serves when it opens; the
  // feed holds back those of transactions younger than the oldest one still
  // open on the shared test server. A stream opens once those have ended, so
  // the test's own earlier writes come before it rather than in it.
  const stream = async (familyId: number, token: string | null, query = '', headers: Record<string, string> = {}) => {
    await transactionsSettled(app.db.sql)
    const s = await api.stream(familyId, token, query, headers)
    opened.push(s)
    return s
  }
  return { app, api, owner, stream }
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

t.test('a change written through one instance reaches a stream on another within 1 s', async t => {
  const { app: first, api, owner, stream } = await setup(t)
  const second = await buildApp(testConfig(t, first.db.url, OPEN))
  t.teardown(() => second.close())
  const other = new Client(await listening(second))

  // As the setup's streams do: once the transactions open now have ended, so
  // the registrations before come before the stream rather than in it.
  await transactionsSettled(first.db.sql)
  const live = await other.stream(owner.familyId, owner.accessToken)
  t.teardown(() => live.close())
  t.equal(live.status, 200)
  t.match(live.headers.get('content-type'), /^text\/event-stream/)
  t.equal(live.headers.get('cache-control'), 'no-store')
  t.equal(live.headers.get('x-accel-buffering'), 'no')
  t.ok(live.headers.get('x-content-type-options'), 'the usual headers')
  t.ok(live.headers.get('x-request-id'))

  const childId = await api.child(owner, owner.familyId)
  const written = Date.now()
  const measurementId = await api.measurement(owner, childId)
  const got = await events(live, 3, 1000)
  const arrived = Date.now()
  t.ok(arrived - written < 1000, `arrived in ${arrived - written} ms`)
  t.same(got.map(e => [e.event, e.data.kind, e.data.op]), [
    ['change', 'child', 'created'], ['change', 'family', 'updated'], ['change', 'measurement', 'created']
  ])
  t.equal(got[2].data.id, measurementId)
  t.equal(got[2].data.record.weightKg, 9)
  t.equal(got[1].data.record.role, 'owner', 'the family\'s record carries the reader\'s role')
  for (const e of got) t.equal(e.id, e.data.cursor, 'the event id is the change\'s cursor')

  const feed = await api.ok('GET', `/api/families/${owner.familyId}/changes`, owner.accessToken)
  t.same(got.map(e => e.data), feed.data.slice(-3), 'the events are the changes the feed answers')

  // And the other way round, with the stream on the first instance.
  const back = await stream(owner.familyId, owner.accessToken)
  await other.measurement(owner, childId, 10)
  t.equal((await events(back, 1, 1000))[0]?.data.record.weightKg, 10)
})

t.test('Last-Event-ID and since resume after a disconnection: every change missed, in order, once', async t => {
  const { api, owner, stream } = await setup(t)
  const childId = await api.child(owner, owner.familyId)
  const first = await stream(owner.familyId, owner.accessToken)
  await api.measurement(owner, childId, 1)
  const [seen] = await events(first, 1)
  first.close()

  const written: number[] = []
  for (let i = 0; i < 20; i++) written.push(await api.measurement(owner, childId, 2 + i))

  const resumed = await stream(owner.familyId, owner.accessToken, '', { 'last-event-id': seen.id })
  t.equal(resumed.status, 200)
  await events(resumed, 20)
  await new Promise(resolve => setTimeout(resolve, 300))
  t.same(resumed.events.map(e => e.data.id), written, 'exactly the 20 changes, in order')
  t.same(resumed.events.map(e => e.data.record.weightKg), written.map((_, i) => 2 + i))

  // Live changes follow the missed ones without a gap.
  const next = await api.measurement(owner, childId, 30)
  t.equal((await events(resumed, 21))[20]?.data.id, next)
  t.equal(resumed.events.length, 21)

  // ?since= does the same; Last-Event-ID wins over it.
  const bySince = await stream(owner.familyId, owner.accessToken, `?since=${resumed.events[9].id}`)
  await events(bySince, 11)
  await new Promise(resolve => setTimeout(resolve, 200))
  t.same(bySince.events.map(e => e.data.id), [...written.slice(10), next])
  const both = await stream(owner.familyId, owner.accessToken, `?since=${seen.id}`, { 'last-event-id': resumed.events[19].id })
  await events(both, 1)
  await new Promise(resolve => setTimeout(resolve, 200))
  t.same(both.events.map(e => e.data.id), [next])

  // Without a cursor: only what commits after the stream opened.
  const fresh = await stream(owner.familyId, owner.accessToken)
  await new Promise(resolve => setTimeout(resolve, 200))
  t.same(fresh.events, [])
})

t.test('changes written while streams open arrive once, none lost', async t => {
  const { api, owner, stream } = await setup(t)
  const childId = await api.child(owner, owner.familyId)
  const feedBefore = await api.ok('GET', `/api/families/${owner.familyId}/changes`, owner.accessToken)
  const writes = Promise.all(Array.from({ length: 30 }, (_, i) => api.measurement(owner, childId, 3 + i)))
  const streams = await Promise.all([
    stream(owner.familyId, owner.accessToken, `?since=${feedBefore.meta.nextCursor}`),
    stream(owner.familyId, owner.accessToken, `?since=${feedBefore.meta.nextCursor}`)
  ])
  const ids = (await writes).sort((a, b) => a - b)
  for (const s of streams) {
    await events(s, 30, 3000)
    await new Promise(resolve => setTimeout(resolve, 200))
    t.same(s.events.map(e => e.data.id).sort((a, b) => a - b), ids, 'each change once')
    const cursors = s.events.map(e => Number(Buffer.from(e.id, 'base64url').toString().split('.')[2]))
    t.same(cursors, [...cursors].sort((a, b) => a - b), 'in the order they committed')
  }
})

t.test('a removed member\'s stream ends at once, after the event that says so', async t => {
  const { api, owner, stream } = await setup(t)
  const member = await api.join(owner, 'member')
  const live = await stream(owner.familyId, member.accessToken)
  t.equal(live.status, 200)
  await api.ok('DELETE', `/api/families/${owner.familyId}/members/${member.user.id}`, owner.accessToken)
  t.ok(await ends(live), 'the stream ended')
  t.same(live.events.map(e => [e.data.kind, e.data.op, e.data.id]), [['member', 'deleted', member.user.id]], 'nothing after the removal')
})

t.test('a member whose role changes gets the family with the new role', async t => {
  const { api, owner, stream } = await setup(t)
  const member = await api.join(owner, 'member')
  const live = await stream(owner.familyId, member.accessToken)
  await api.ok('PATCH', `/api/families/${owner.familyId}/members/${member.user.id}`, owner.accessToken, { role: 'viewer' })
  const got = await events(live, 2)
  t.same(got.map(e => [e.data.kind, e.data.record.role]), [['member', 'viewer'], ['family', 'viewer']])
  t.notOk(live.ended, 'a viewer still listens')
})

t.test('a logout ends the stream; so does a session revoked elsewhere', async t => {
  const { api, owner, stream } = await setup(t)
  const live = await stream(owner.familyId, owner.accessToken)
  const other = await api.ok('POST', '/api/auth/login', null, { email: owner.user.email, password: PASSWORD })
  const elsewhere = await stream(owner.familyId, other.accessToken)
  const res = await api.call('POST', '/api/auth/logout', owner.accessToken, {})
  t.equal(res.status, 204)
  t.ok(await ends(live), 'the stream of the session ended')
  t.notOk(elsewhere.ended, 'another session\'s stream goes on')

  const sessions = await api.ok('GET', '/api/me/sessions', other.accessToken)
  const [mine] = sessions.data
  t.equal(sessions.data.length, 1)
  t.equal((await api.call('DELETE', `/api/me/sessions/${mine.id as number}`, other.accessToken)).status, 204)
  t.ok(await ends(elsewhere), 'a revoked session\'s stream ended')
})

t.test('a deleted family ends its streams', async t => {
  const { api, owner, stream } = await setup(t)
  const family = await api.ok('POST', '/api/families', owner.accessToken, { name: 'Short-lived' })
  const live = await stream(family.id, owner.accessToken)
  const home = await stream(owner.familyId, owner.accessToken)
  t.equal(live.status, 200)
  t.equal((await api.call('DELETE', `/api/families/${family.id as number}`, owner.accessToken)).status, 204)
  t.ok(await ends(live), 'the stream ended')
  t.notOk(home.ended, 'the other family\'s stream goes on')
})

t.test('tickets: once, within 60 s, for their family and session only', async t => {
  const { app, api, owner, stream } = await setup(t)
  const path = `/api/families/${owner.familyId}/events/tickets`

  const made = await api.call('POST', path, owner.accessToken)
  t.equal(made.status, 201)
  t.equal(made.body.expiresIn, 60)
  t.equal(made.headers.get('cache-control'), 'no-store')
  const [stored] = await app.db.sql`select extract(epoch from expires_at - now())::float8 as left, user_id from event_tickets where token_hash = ${sha256(made.body.ticket)}`
  t.ok(stored.left > 55 && stored.left <= 60, 'stored by its hash, for 60 s')
  t.equal(stored.user_id, owner.user.id)

  const live = await stream(owner.familyId, null, `?ticket=${made.body.ticket}`)
  t.equal(live.status, 200, 'a ticket opens the stream without headers')
  const childId = await api.child(owner, owner.familyId)
  t.equal((await events(live, 1))[0]?.data.id, childId)
  const again = await stream(owner.familyId, null, `?ticket=${made.body.ticket}`)
  t.equal(again.status, 401, 'a used ticket')
  t.equal(again.body.code, 'UNAUTHORIZED')
  t.equal(again.headers.get('www-authenticate'), 'Bearer')

  const late = (await api.call('POST', path, owner.accessToken, {})).body.ticket
  await app.db.sql`update event_tickets set expires_at = now() - interval '1 second' where token_hash = ${sha256(late)}`
  const expired = await stream(owner.familyId, null, `?ticket=${late}`)
  t.equal(expired.status, 401, 'an expired ticket')
  t.same(Object.keys(expired.body).sort(), ['code', 'details', 'error'])

  const family = await api.ok('POST', '/api/families', owner.accessToken, { name: 'Second' })
  const elsewhere = (await api.ok('POST', `/api/families/${family.id as number}/events/tickets`, owner.accessToken, {})).ticket
  const wrong = await stream(owner.familyId, null, `?ticket=${elsewhere}`)
  t.equal(wrong.status, 401, 'a ticket of another family')
  t.equal(wrong.headers.get('www-authenticate'), 'Bearer')

  for (const [label, query] of [['a garbage ticket', '?ticket=garbage'], ['no token', '']]) {
    const refused = await stream(owner.familyId, null, query)
    t.equal(refused.status, 401, label)
    t.equal(refused.body.code, 'UNAUTHORIZED')
    t.equal(refused.headers.get('www-authenticate'), 'Bearer')
  }

  const login = await api.ok('POST', '/api/auth/login', null, { email: owner.user.email, password: PASSWORD })
  const orphan = (await api.ok('POST', path, login.accessToken, {})).ticket
  await api.call('POST', '/api/auth/logout', login.accessToken, {})
  const ended = await stream(owner.familyId, null, `?ticket=${orphan}`)
  t.equal(ended.status, 401, 'a ticket of a session that ended')

  const stranger = await api.register()
  t.equal((await api.call('POST', path, stranger.accessToken, {})).status, 403, 'a stranger gets no ticket')
  t.equal((await api.call('POST', path, null, {})).status, 401)
})

t.test('who may listen: members and viewers; strangers get 403', async t => {
  const { api, owner, stream } = await setup(t)
  const viewer = await api.join(owner, 'viewer')
  const stranger = await api.register()

  const refused = await stream(owner.familyId, stranger.accessToken)
  t.equal(refused.status, 403)
  t.same(refused.body, { error: 'Access denied', code: 'FORBIDDEN', details: {} })
  t.equal((await stream(999999, owner.accessToken)).status, 404)

  const live = await stream(owner.familyId, viewer.accessToken)
  t.equal(live.status, 200, 'a viewer may listen')
  const ticket = await api.call('POST', `/api/families/${owner.familyId}/events/tickets`, viewer.accessToken, {})
  t.equal(ticket.status, 201, 'and ask for a ticket')
  await api.child(owner, owner.familyId)
  const got = await events(live, 2)
  t.same(got.map(e => e.data.kind), ['child', 'family'])
  t.equal(got[1].data.record.role, 'viewer')
})

t.test('a change of another family never reaches the stream', async t => {
  const { api, owner, stream } = await setup(t)
  const neighbour = await api.register()
  const live = await stream(owner.familyId, owner.accessToken)
  const theirs = await api.child(neighbour, neighbour.familyId)
  await api.measurement(neighbour, theirs)
  await api.ok('PATCH', `/api/families/${neighbour.familyId}`, neighbour.accessToken, { name: 'Next door' })
  const ours = await api.child(owner, owner.familyId)
  const got = await events(live, 2)
  await new Promise(resolve => setTimeout(resolve, 200))
  t.same(live.events.map(e => [e.data.kind, e.data.id]), [['child', ours], ['family', owner.familyId]])
  t.ok(got.every(e => Buffer.from(e.id, 'base64url').toString().startsWith(`${owner.familyId}.`)))
})

t.test('at most 5 streams per user: the 6th is 429 with Retry-After', async t => {
  const { api, owner, stream } = await setup(t)
  const open: Stream[] = []
  for (let i = 0; i < 5; i++) open.push(await stream(owner.familyId, owner.accessToken))
  t.same(open.map(s => s.status), [200, 200, 200, 200, 200])
  const sixth = await stream(owner.familyId, owner.accessToken)
  t.equal(sixth.status, 429)
  t.equal(sixth.body.code, 'RATE_LIMITED')
  t.match(sixth.headers.get('retry-after'), /^\d+$/)
  const member = await api.join(owner, 'member')
  t.equal((await stream(owner.familyId, member.accessToken)).status, 200, 'another user is not counted')

  open[0].close()
  let next: Stream | null = null
  await until(() => false, 100)
  for (let tries = 0; tries < 20 && next?.status !== 200; tries++) {
    next = await stream(owner.familyId, owner.accessToken)
    if (next.status !== 200) await new Promise(resolve => setTimeout(resolve, 50))
  }
  t.equal(next?.status, 200, 'a closed stream gives its place back')
})

t.test('HEAD answers the headers of a stream and opens none', async t => {
  const logs: string[] = []
  const { app, api, owner, stream } = await setup(t, {}, logs)
  const stranger = await api.register()
  const url = `/api/families/${owner.familyId}/events`
  const head = (token: string, query = '') => fetch(`${api.origin}${url}${query}`, { method: 'HEAD', headers: bearer(token) })

  const heads = await Promise.all(Array.from({ length: 8 }, () => head(owner.accessToken)))
  t.same(heads.map(res => res.status), Array(8).fill(200), 'eight HEADs at once, where five streams may be open')
  t.equal(heads[0].headers.get('content-type'), 'text/event-stream')
  t.equal(heads[0].headers.get('cache-control'), 'no-store')
  t.equal(heads[0].headers.get('x-accel-buffering'), 'no')
  t.equal(await heads[0].text(), '', 'no body')
  t.equal(app.changeEvents.count(), 0, 'no stream is open')
  const open: Stream[] = []
  for (let i = 0; i < 5; i++) open.push(await stream(owner.familyId, owner.accessToken))
  t.same(open.map(s => s.status), [200, 200, 200, 200, 200], 'the user still opens five streams')

  t.equal((await head(stranger.accessToken)).status, 403, 'a stranger: 403, as for a GET')
  t.equal((await head(owner.accessToken, '?since=nonsense')).status, 400, 'a bad cursor: 400, as for a GET')
  t.same(logs.map(line => JSON.parse(line)).filter(entry => entry.level >= 50), [], 'no error is logged')
})

t.test('a bad cursor is 400', async t => {
  const { app, api, owner, stream } = await setup(t)
  const neighbour = await api.register()
  await api.child(neighbour, neighbour.familyId)
  const theirs = (await api.ok('GET', `/api/families/${neighbour.familyId}/changes`, neighbour.accessToken)).meta.nextCursor
  const ours = (await api.ok('GET', `/api/families/${owner.familyId}/changes`, owner.accessToken)).meta.nextCursor

  const cases: Array<[string, string, Record<string, string>, string]> = [
    ['malformed since', '?since=not-a-cursor', {}, '/query/since'],
    ['since of another family', `?since=${theirs as string}`, {}, '/query/since'],
    ['malformed Last-Event-ID', '', { 'last-event-id': 'garbage!' }, '/headers/last-event-id'],
    ['Last-Event-ID of another family', '', { 'last-event-id': theirs }, '/headers/last-event-id']
  ]
  for (const [label, query, headers, path] of cases) {
    const res = await stream(owner.familyId, owner.accessToken, query, headers)
    t.equal(res.status, 400, label)
    t.equal(res.body.code, 'VALIDATION_ERROR')
    t.equal(res.body.details.issues[0].path, path, `${label}: ${path}`)
  }

  await app.db.sql`update family_clocks set epoch = 'abcdef0123' where family_id = ${owner.familyId}`
  const restored = await stream(owner.familyId, owner.accessToken, `?since=${ours as string}`)
  t.equal(restored.status, 400, 'a cursor from before a restore')
  t.match(restored.body.details.issues[0].message, /restored/)

  // A failed stream gives its place back.
  const open = await Promise.all(Array.from({ length: 5 }, () => stream(owner.familyId, owner.accessToken)))
  t.same(open.map(s => s.status), [200, 200, 200, 200, 200])
})

t.test('keep-alive comments arrive every EVENT_KEEPALIVE seconds', async t => {
  const { owner, stream } = await setup(t, { EVENT_KEEPALIVE: '1' })
  const live = await stream(owner.familyId, owner.accessToken)
  t.ok(await until(() => live.comments.filter(c => c === 'keep-alive').length >= 2, 3500), `comments: ${live.comments.join(', ')}`)
  t.same(live.events, [])
  t.notOk(live.ended)
})

/** A client that asks for the stream, gets its headers, then reads nothing more. */
function stalledClient (origin: string, path: string, token: string): Promise<net.Socket> {
  const { hostname, port } = new URL(origin)
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${token}\r\n\r\n`)
    })
    socket.once('data', head => {
      if (!head.toString().startsWith('HTTP/1.1 200')) reject(new Error(head.toString()))
      socket.pause()
      resolve(socket)
    })
    socket.on('error', () => {})
  })
}

t.test('a client that does not read is cut off', async t => {
  const logs: string[] = []
  const app = await build(t, { env: { ...OPEN, DOWNLOAD_IDLE_TIMEOUT: '1' }, logs })
  const api = new Client(await listening(app))
  await api.register()
  const owner = await api.register()
  const childId = await api.child(owner, owner.familyId)
  const start = (await api.ok('GET', `/api/families/${owner.familyId}/changes`, owner.accessToken)).meta.nextCursor as string
  const ended = (reason: string) => logs.filter(line => line.includes('event stream ended') && line.includes(reason)).length

  // Live: 20 MB of changes in one transaction, more than the sockets hold.
  const live = await stalledClient(api.origin, `/api/families/${owner.familyId}/events`, owner.accessToken)
  t.teardown(() => live.destroy())
  const watching = await api.stream(owner.familyId, owner.accessToken)
  t.teardown(() => watching.close())
  const note = 'n'.repeat(10_000)
  await app.db.sql`
    insert into measurements (child_id, measured_at, weight_kg, notes)
    select ${childId}, date '2022-01-01', 9, ${note} from generate_series(1, 2000)
  `
  t.ok(await until(() => ended('the client does not read') === 1, 10_000), 'a live stream with 1 MiB unread is ended')
  t.equal((await events(watching, 2000, 60_000)).length, 2000, 'a client that reads gets them all')
  t.notOk(watching.ended)

  // Catching up: the backlog waits for the client, then DOWNLOAD_IDLE_TIMEOUT ends it.
  const behind = await stalledClient(api.origin, `/api/families/${owner.familyId}/events?since=${start}`, owner.accessToken)
  t.teardown(() => behind.destroy())
  t.ok(await until(() => ended('the client read nothing') === 1, 5000), 'a stream catching up that reads nothing is ended')

  // A client that reads gets the whole backlog.
  const reader = await api.stream(owner.familyId, owner.accessToken, `?since=${start}`)
  t.teardown(() => reader.close())
  t.equal((await events(reader, 2000, 60_000)).length, 2000, 'a reading client gets all 2000 changes, 20 MB')
})

t.test('the service closes with streams open, ending them', async t => {
  const { app, owner, stream } = await setup(t)
  const live = await stream(owner.familyId, owner.accessToken)
  t.equal(live.status, 200)
  const started = Date.now()
  await app.close()
  t.ok(Date.now() - started < 3000, 'closed without waiting for the stream')
  t.ok(await ends(live), 'the stream ended')
})

t.test('a write nobody announced (made outside the service) still reaches the streams', async t => {
  const { app, api, owner, stream } = await setup(t)
  const childId = await api.child(owner, owner.familyId)
  const live = await stream(owner.familyId, owner.accessToken)
  t.equal(live.status, 200)
  // Straight into the database, as the command line or another program would:
  // the change is recorded, but no service announces it.
  const [{ id }] = await app.db.sql<{ id: number }[]>`
    insert into measurements (child_id, measured_at, height_cm) values (${childId}, '2022-02-02', 81) returning id
  `
  const started = Date.now()
  const got = await events(live, 1, 5000)
  t.same(got.map(e => [e.data.kind, e.data.id, e.data.op, e.data.userId]), [['measurement', id, 'created', null]], 'it arrives, written for nobody')
  t.ok(Date.now() - started < 4000, `within the clocks' poll (${Date.now() - started} ms)`)
})
