// Real receivers of reminders on 127.0.0.1, started by a test and stopped at
// its teardown: an SMTP server (smtp-server) and an HTTP server that acts as
// an ntfy topic.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { SMTPServer } from 'smtp-server'
import type { Test } from 'tap'

export interface Mail {
  from: string
  to: string[]
  subject: string
  /** The text of the body, decoded. */
  text: string
  /** The whole message as it arrived. */
  raw: string
}

export interface MailServer {
  url: string
  mails: Mail[]
  /** While set, every recipient is refused with 550 and this text. */
  refuse: string | null
}

/** Decodes quoted-printable text. */
function unQuote (text: string): string {
  const bytes = text.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/gi, (_match, hex: string) => String.fromCharCode(parseInt(hex, 16)))
  return Buffer.from(bytes, 'latin1').toString('utf8')
}

function parseMail (raw: string, from: string, to: string[]): Mail {
  const split = raw.indexOf('\r\n\r\n')
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, ' ')
  const body = raw.slice(split + 4)
  const header = (name: string): string => new RegExp(`^${name}: (.*)$`, 'im').exec(head)?.[1] ?? ''
  const encoding = header('Content-Transfer-Encoding').toLowerCase()
  const text = encoding === 'quoted-printable' ? unQuote(body) : encoding === 'base64' ? Buffer.from(body, 'base64').toString('utf8') : body
  const subject = header('Subject').replace(/=\?UTF-8\?([BQ])\?([^?]*)\?=/gi, (_m, kind: string, data: string) =>
    kind.toUpperCase() === 'B' ? Buffer.from(data, 'base64').toString('utf8') : unQuote(data.replace(/_/g, ' ')))
  return { from, to, subject, text: text.trim(), raw }
}

/** An SMTP server without TLS or authentication, keeping every message it takes. */
export async function mailServer (t: Test): Promise<MailServer> {
  const state: MailServer = { url: '', mails: [], refuse: null }
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onRcptTo (_address, _session, callback) {
      if (state.refuse === null) return callback()
      callback(Object.assign(new Error(state.refuse), { responseCode: 550 }))
    },
    onData (stream, session, callback) {
      const chunks: Buffer[] = []
      stream.on('data', (chunk: Buffer) => chunks.push(chunk))
      stream.on('end', () => {
        const from = session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address
        state.mails.push(parseMail(Buffer.concat(chunks).toString('latin1'), from, session.envelope.rcptTo.map(item => item.address)))
        callback()
      })
    }
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  state.url = `smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}`
  t.teardown(() => new Promise<void>(resolve => server.close(() => resolve())))
  return state
}

export interface Post {
  path: string
  title: string
  text: string
  headers: http.IncomingHttpHeaders
}

export interface NtfyServer {
  /** The origin, http://127.0.0.1:<port>; a topic is any path under it. */
  origin: string
  posts: Post[]
  /** The status answered; 200 by default. */
  status: number
  /** Milliseconds to wait before answering. */
  delay: number
  /** When each POST arrived (Date.now()), answered with success or not. */
  hits: Array<{ path: string, at: number, status: number }>
  /** The most reminders (test messages left out) it was answering at once. */
  peakInFlight: number
}

/** Decodes a header written as an RFC 2047 encoded word, as ntfy does. */
function decodeHeader (value: string): string {
  const word = /^=\?UTF-8\?B\?(.*)\?=$/i.exec(value)
  return word === null ? value : Buffer.from(word[1], 'base64').toString('utf8')
}

/** An HTTP server that takes POSTs like an ntfy server's topics. */
export async function ntfyServer (t: Test): Promise<NtfyServer> {
  const state: NtfyServer = { origin: '', posts: [], status: 200, delay: 0, hits: [], peakInFlight: 0 }
  let inFlight = 0
  const server = http.createServer((request, response) => {
    state.hits.push({ path: request.url ?? '', at: Date.now(), status: state.status })
    if (!/test message/.test(decodeHeader(String(request.headers.title ?? '')))) {
      inFlight += 1
      state.peakInFlight = Math.max(state.peakInFlight, inFlight)
      response.on('close', () => { inFlight -= 1 })
    }
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const answer = (): void => {
        if (state.status === 200) {
          state.posts.push({
            path: request.url ?? '',
            title: decodeHeader(String(request.headers.title ?? '')),
            text: Buffer.concat(chunks).toString('utf8'),
            headers: request.headers
          })
        }
        response.writeHead(state.status, { 'content-type': 'application/json' })
        response.end(state.status === 200 ? '{"id":"x"}' : '{"error":"topic unavailable"}')
      }
      if (state.delay > 0) setTimeout(answer, state.delay)
      else answer()
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  state.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  t.teardown(() => new Promise<void>(resolve => {
    server.closeAllConnections()
    server.close(() => resolve())
  }))
  return state
}

/** Waits until `ready` holds, checking every 50 ms; fails after `ms`. */
export async function until (ready: () => boolean | Promise<boolean>, ms = 20_000, what = 'the condition'): Promise<void> {
  for (const stop = Date.now() + ms; Date.now() < stop;) {
    if (await ready()) return
    await new Promise(resolve => setTimeout(resolve, 50))
  }
  throw new Error(`${what} did not come within ${ms} ms`)
}
