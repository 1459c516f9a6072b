import http from 'node:http'

/**
 * The attacker of the password flood: a process of its own, as the attacker's
 * machine would be, started at the lowest priority (nice 19) so that on a
 * small machine its CPU is not taken from the service it attacks.
 *
 * LOOPS loops each send `POST /api/me/password` with a wrong
 * `currentPassword` and the account's TOKEN, the next as soon as the last
 * answered; with HONOR_RETRY_AFTER=1 a loop that got a 429 first waits its
 * Retry-After. Prints `{"ready":true}` once every loop has had an answer, and
 * on SIGTERM its counts as one JSON line, then exits.
 */

const url = new URL('/api/me/password', process.env.SERVICE_URL)
const token = process.env.TOKEN as string
const loops = Number(process.env.LOOPS ?? 64)
const honorRetryAfter = process.env.HONOR_RETRY_AFTER === '1'

const agent = new http.Agent({ keepAlive: true, maxSockets: loops })
const body = JSON.stringify({ currentPassword: 'not the password at all', newPassword: 'a new password 1' })
const statuses: Record<string, number> = {}
let errors = 0
let answered = 0
let stopping = false
let started = 0

function send (): Promise<{ status: number, retryAfter: number }> {
  return new Promise(resolve => {
    const req = http.request(url, {
      method: 'POST',
      agent,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }
    }, res => {
      res.resume()
      res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: Number(res.headers['retry-after'] ?? 0) }))
      res.on('error', () => resolve({ status: 0, retryAfter: 0 }))
    })
    req.on('error', () => resolve({ status: 0, retryAfter: 0 }))
    req.end(body)
  })
}

async function loop (): Promise<void> {
  let first = true
  while (!stopping) {
    const { status, retryAfter } = await send()
    if (status === 0) errors += 1
    else statuses[status] = (statuses[status] ?? 0) + 1
    if (first) {
      first = false
      answered += 1
      if (answered === loops) process.stdout.write(JSON.stringify({ ready: true }) + '\n')
    }
    if (status === 0) await new Promise(resolve => setTimeout(resolve, 100))
    else if (status === 429 && honorRetryAfter && retryAfter > 0) await new Promise(resolve => setTimeout(resolve, retryAfter * 1000))
  }
}

process.once('SIGTERM', () => {
  stopping = true
  const seconds = (Date.now() - started) / 1000
  const requests = Object.values(statuses).reduce((sum, count) => sum + count, 0)
  process.stdout.write(JSON.stringify({ statuses, errors, requests, perSecond: Math.round(requests / seconds) }) + '\n', () => process.exit(0))
})

started = Date.now()
for (let i = 0; i < loops; i += 1) void loop()
