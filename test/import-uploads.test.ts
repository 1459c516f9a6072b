import t from 'tap'
import { readdirSync } from 'node:fs'
import net from 'node:net'
import { bearer, build, call, register, type App, type Pair } from './helper'
import { archivePayload, multipartPayload } from './route-samples'

// Uploads over real sockets: an import's slot is taken once its body is
// whole, and an archive that comes too slowly is ended.

const OPEN = { REGISTRATION: 'open' }
const SLOW = { ...OPEN, UPLOAD_MIN_RATE: '1000', UPLOAD_RATE_WINDOW: '1' }
const MB = 1024 * 1024

async function listening (app: App): Promise<number> {
  await app.listen({ port: 0, host: '127.0.0.1' })
  return (app.server.address() as net.AddressInfo).port
}

interface Answer {
  status: number
  body: any
  /** When the server closed the connection, in ms since the request began. */
  closedAfter: number
}

interface Upload {
  socket: net.Socket
  answer: Promise<Answer>
  send: (bytes: Buffer | string) => void
}

/** A POST whose body is sent by the caller, as slowly as it likes; `length` is the Content-Length it announces. */
function post (port: number, url: string, pair: Pair, headers: Record<string, string>, length: number): Upload {
  const started = Date.now()
  const socket = net.connect(port, '127.0.0.1')
  socket.on('error', () => {})
  const chunks: Buffer[] = []
  socket.on('data', chunk => chunks.push(chunk))
  const answer = new Promise<Answer>(resolve => socket.once('close', () => {
    const text = Buffer.concat(chunks).toString()
    const [head, ...rest] = text.split('\r\n\r\n')
    const body = rest.join('\r\n\r\n')
    resolve({ status: Number(head.split(' ')[1]), body: body === '' ? null : JSON.parse(body), closedAfter: Date.now() - started })
  }))
  const lines = Object.entries({ ...headers, ...bearer(pair.accessToken), 'content-length': String(length) }).map(([name, value]) => `${name}: ${value}\r\n`)
  socket.write(`POST ${url} HTTP/1.1\r\nHost: 127.0.0.1\r\n${lines.join('')}\r\n`)
  return { socket, answer, send: bytes => { if (!socket.destroyed) socket.write(bytes) } }
}

/** A whole body sent at once; the connection is closed once answered. */
async function posted (port: number, url: string, pair: Pair, payload: Buffer, headers: Record<string, string>): Promise<Answer> {
  const upload = post(port, url, pair, { ...headers, connection: 'close' }, payload.length)
  upload.send(payload)
  return upload.answer
}

async function until (check: () => boolean, ms: number): Promise<boolean> {
  for (const stop = Date.now() + ms; Date.now() < stop;) {
    if (check()) return true
    await new Promise(resolve => setTimeout(resolve, 20))
  }
  return check()
}

const IMPORT = '/api/families/import'

t.test('two stalled imports keep no slot from a third user, and end with 408 below UPLOAD_MIN_RATE, leaving no file', async t => {
  const app = await build(t, { env: SLOW })
  const port = await listening(app)
  const [first, second, third] = [await register(app), await register(app), await register(app)]
  const { payload, headers } = await archivePayload(app)
  // The archive's part up to where its file's bytes begin.
  const partHead = payload.subarray(0, payload.indexOf('\r\n\r\n') + 4)
  const files = (): string[] => readdirSync(app.config.uploadDir)

  // One stalls inside its file, the other before its body begins: each announces 50 MB.
  const inFile = post(port, IMPORT, first, headers, 50 * MB)
  inFile.send(partHead)
  inFile.send(Buffer.alloc(64 * 1024, 7))
  const beforeBody = post(port, IMPORT, second, headers, 50 * MB)
  t.ok(await until(() => files().length === 1, 2000), 'the first upload is being written to disk')

  const again = await call(app, first, 'POST', IMPORT, payload, headers)
  t.equal(again.statusCode, 429, 'the same user\'s second import is refused while the first is open')
  t.equal(again.json().code, 'RATE_LIMITED')
  t.match(again.headers['retry-after'], /^\d+$/)

  const meanwhile = await posted(port, IMPORT, third, payload, headers)
  t.equal(meanwhile.status, 201, 'a third user\'s import goes through meanwhile')
  t.equal(meanwhile.body.family.role, 'owner')

  const stalled = await Promise.all([inFile.answer, beforeBody.answer])
  for (const [name, answer] of [['inside its file', stalled[0]], ['before its body', stalled[1]]] as const) {
    t.equal(answer.status, 408, `an upload stalled ${name} is ended with 408`)
    t.same(answer.body, { error: 'The upload came slower than 1000 bytes a second', code: 'REQUEST_TIMEOUT', details: {} })
    t.ok(answer.closedAfter >= 1000 && answer.closedAfter < 10_000, `after its window without bytes, and its connection closed (${answer.closedAfter} ms)`)
  }
  t.same(files(), [], 'no file is left behind')
  t.equal((await posted(port, IMPORT, first, payload, headers)).status, 201, 'the user may import again')
})

t.test('an archive that comes slowly but above UPLOAD_MIN_RATE is imported', async t => {
  const app = await build(t, { env: SLOW })
  const port = await listening(app)
  const owner = await register(app)
  const { payload: archive, headers } = await archivePayload(app)
  // A preamble before the first boundary, which a multipart body may carry, makes the upload last a few windows.
  const payload = Buffer.concat([Buffer.alloc(6000, 'x'), Buffer.from('\r\n'), archive])
  const upload = post(port, IMPORT, owner, { ...headers, connection: 'close' }, payload.length)
  for (let at = 0; at < payload.length; at += 600) {
    upload.send(payload.subarray(at, at + 600))
    await new Promise(resolve => setTimeout(resolve, 250))
  }
  const answer = await upload.answer
  t.equal(answer.status, 201, '2400 bytes a second, over 2.5 s, where 1000 are the minimum')
  t.ok(answer.closedAfter > 2000, `the upload lasted ${answer.closedAfter} ms`)
})

t.test('attachments and avatars keep no minimum rate: a short pause does not end them', async t => {
  const app = await build(t, { env: SLOW })
  const port = await listening(app)
  const owner = await register(app)
  const child = await call(app, owner, 'POST', '/api/children', { name: 'Kim', dateOfBirth: '2021-06-01', sex: 'female' })
  const { payload, headers } = await multipartPayload()
  const half = Math.floor(payload.length / 2)
  const upload = post(port, `/api/children/${child.json().id}/attachments`, owner, { ...headers, connection: 'close' }, payload.length)
  upload.send(payload.subarray(0, half))
  await new Promise(resolve => setTimeout(resolve, 2500))
  upload.send(payload.subarray(half))
  const answer = await upload.answer
  t.equal(answer.status, 201, 'an attachment paused for two and a half windows is stored')
})

t.test('two imports run at once in all: a third, once its upload is whole, is 429', async t => {
  const app = await build(t, { env: SLOW })
  const port = await listening(app)
  const users = [await register(app), await register(app), await register(app)]
  const { payload, headers } = await archivePayload(app)

  // Every import writes the change that creates its family: while that table is locked, imports stay running.
  let unlock = (): void => {}
  const unlocked = new Promise<void>(resolve => { unlock = resolve })
  let locked = (): void => {}
  const lockTaken = new Promise<void>(resolve => { locked = resolve })
  const holder = app.db.sql.begin(async tx => {
    await tx`lock table changes in access exclusive mode`
    locked()
    await unlocked
  })
  await lockTaken
  const running = users.slice(0, 2).map(pair => posted(port, IMPORT, pair, payload, headers))
  const waiting = async (): Promise<number> => {
    const [row] = await app.db.sql`select count(*)::int as n from pg_locks where relation = 'changes'::regclass and not granted`
    return row.n
  }
  let n = 0
  for (const stop = Date.now() + 5000; Date.now() < stop && n < 2;) {
    n = await waiting()
    await new Promise(resolve => setTimeout(resolve, 20))
  }
  t.equal(n, 2, 'two imports are running, held by the lock')
  const third = await posted(port, IMPORT, users[2], payload, headers)
  t.equal(third.status, 429, 'a third user\'s import, its upload whole, is refused')
  t.equal(third.body.code, 'RATE_LIMITED')
  t.match(third.body.error, /Two imports are already running/)
  t.equal(readdirSync(app.config.uploadDir).length, 2, 'and its upload is not kept: only the running two are on disk')

  unlock()
  await holder
  t.same((await Promise.all(running)).map(answer => answer.status), [201, 201], 'the two running imports go through')
  t.equal((await posted(port, IMPORT, users[2], payload, headers)).status, 201, 'and then the third')
  t.same(readdirSync(app.config.uploadDir), [], 'no upload is left once answered')
})
