/** What the standalone benchmarks (export, import, events) share: a scratch database's URL and JSON calls to the service. */

/** The server's URL with another database name. */
export function withDatabase (url: string, name: string): string {
  const target = new URL(url)
  target.pathname = `/${name}`
  return target.toString()
}

/** A JSON request to the service; anything but a 2xx throws with the answer. */
export async function request (origin: string, method: string, url: string, token: string | null, body?: unknown): Promise<any> {
  const res = await fetch(`${origin}${url}`, {
    method,
    headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  if (!res.ok) throw new Error(`${method} ${url} answered ${res.status}: ${await res.text()}`)
  return res.json()
}
