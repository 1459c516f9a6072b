import http from 'node:http'
import https from 'node:https'
import { guardedLookup, ownAddresses, PRIVATE_HINT, refusedHost } from './outbound-address'

/** A POST that did not get an answer: `refused` when the URL names an address that is not allowed. */
export class PostError extends Error {
  constructor (message: string, readonly refused = false) {
    super(message)
    this.name = 'PostError'
  }
}

export interface PostOptions {
  headers: Record<string, string>
  body: Buffer
  /** The longest the whole request may take, its answer included, in milliseconds. */
  timeoutMs: number
  /** Whether loopback, link-local and the service's own addresses may be sent to (WEBHOOK_ALLOW_PRIVATE). */
  allowPrivate: boolean
  /** The address the service listens on: one of its own. */
  host: string
  /** What is sent to, for the messages: "ntfy", "the webhook". */
  what: string
}

export interface PostAnswer {
  status: number
  /** The first words of the answer's body, spaces folded, at most 200 characters. */
  excerpt: string
}

/** The first words of an answer's body: the rest is read and dropped. */
async function excerpt (response: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of response) {
    if (size < 300) chunks.push(chunk as Buffer)
    size += (chunk as Buffer).length
  }
  return Buffer.concat(chunks).toString('utf8').replace(/\s+/g, ' ').trim().slice(0, 200)
}

/**
 * One POST to a URL a user gave: a user name and password in the URL are
 * sent as Basic authentication, redirects are not followed (a 3xx is
 * answered as it came), and the whole request takes at most `timeoutMs`.
 * Unless private addresses are allowed, a URL on loopback, link-local or the
 * service's own address is refused, and a name is resolved and checked right
 * before the connection, which goes to the address that was checked.
 */
export async function postOnce (url: URL, options: PostOptions): Promise<PostAnswer> {
  const { what, timeoutMs } = options
  const own = ownAddresses(options.host)
  if (!options.allowPrivate) {
    const refused = refusedHost(url, own)
    if (refused !== null) throw new PostError(`${refused}, ${PRIVATE_HINT}`, true)
  }
  const headers: Record<string, string> = { ...options.headers, 'content-length': String(options.body.length) }
  if (url.username !== '' || url.password !== '') {
    const credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`
    headers.authorization = `Basic ${Buffer.from(credentials).toString('base64')}`
  }
  const target = new URL(url)
  target.username = ''
  target.password = ''
  const client = url.protocol === 'https:' ? https : http
  const signal = AbortSignal.timeout(timeoutMs)
  const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const request = client.request(target, {
      method: 'POST',
      headers,
      signal,
      agent: false,
      ...(options.allowPrivate ? {} : { lookup: guardedLookup(own) })
    }, resolve)
    request.on('error', error => {
      reject(new PostError(signal.aborted ? `${what} did not answer within ${timeoutMs / 1000} s` : `${what} could not be reached: ${error.message}`))
    })
    request.end(options.body)
  })
  try {
    return { status: response.statusCode ?? 0, excerpt: await excerpt(response) }
  } catch {
    throw new PostError(`${what}'s answer did not arrive within ${timeoutMs / 1000} s`)
  }
}
