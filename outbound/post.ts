import http from 'node:http'
import https from 'node:https'
import { guardedLookup, outboundRule, refusedHost, RefusedAddressError } from './address'
import { httpUrlProblem } from '../lib/outbound-url'

/**
 * A POST that did not get an answer: `refused` when the URL or the address
 * it names may not be sent to. Every other failure (refused, reset, timed
 * out, unknown name) has the same message, so that it does not tell one
 * port from another; the cause keeps what happened, for the log.
 */
export class PostError extends Error {
  constructor (message: string, readonly refused = false, cause?: unknown) {
    super(message, { cause })
    this.name = 'PostError'
  }
}

export interface PostOptions {
  headers: Record<string, string>
  body: Buffer
  /** The longest the whole request may take, in milliseconds. */
  timeoutMs: number
  /** Whether private addresses may be sent to (WEBHOOK_ALLOW_PRIVATE). */
  allowPrivate: boolean
  /** The address the service listens on: one of its own. */
  host: string
  /** What is sent to, for the messages: "ntfy", "the webhook". */
  what: string
}

/** The answer's status and headers; its body is never read, nor shown. */
export interface PostAnswer {
  status: number
  headers: http.IncomingHttpHeaders
}

function withoutLength (headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => name.toLowerCase() !== 'content-length'))
}

/**
 * One POST to a URL a user gave: a user name and password in the URL are
 * sent as Basic authentication, redirects are not followed (a 3xx is
 * answered as it came), and the whole request takes at most `timeoutMs`.
 * The URL's address is judged by the outbound rule (outbound/address.ts):
 * written as an IP address before the request, and a name right before the
 * connection, which goes to the address judged.
 */
export async function postOnce (url: string, options: PostOptions): Promise<PostAnswer> {
  const { what, timeoutMs } = options
  const problem = httpUrlProblem(url)
  if (problem !== null) throw new PostError(`${what}'s URL ${problem}`, true)
  const parsed = new URL(url)
  const rule = outboundRule(options.allowPrivate, options.host)
  const refused = refusedHost(parsed, rule)
  if (refused !== null) throw new PostError(refused, true)
  const headers: Record<string, string> = { ...withoutLength(options.headers), 'content-length': String(options.body.length) }
  if (parsed.username !== '' || parsed.password !== '') {
    const credentials = `${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`
    headers.authorization = `Basic ${Buffer.from(credentials).toString('base64')}`
  }
  parsed.username = ''
  parsed.password = ''
  const client = parsed.protocol === 'https:' ? https : http
  const signal = AbortSignal.timeout(timeoutMs)
  return await new Promise<PostAnswer>((resolve, reject) => {
    const request = client.request(parsed, { method: 'POST', headers, signal, agent: false, lookup: guardedLookup(rule) }, response => {
      response.on('error', () => {})
      response.resume()
      resolve({ status: response.statusCode ?? 0, headers: response.headers })
    })
    request.on('error', error => {
      reject(error instanceof RefusedAddressError ? new PostError(error.message, true, error) : new PostError(`${what} could not be reached`, false, error))
    })
    request.end(options.body)
  })
}
