import { settings } from './settings'

export interface Pair {
  accessToken: string
  refreshToken: string
  user: { id: number, email: string, role: string }
}

async function post<T> (url: string, body: unknown, expected: number): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000)
  })
  const text = await res.text()
  if (res.status !== expected) throw new Error(`POST ${new URL(url).pathname} answered ${res.status}: ${text}`)
  return JSON.parse(text) as T
}

/** Runs `task` for 0..count-1, at most `width` at a time. */
export async function inBatches<T> (count: number, width: number, task: (index: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count)
  let next = 0
  const lane = async (): Promise<void> => {
    while (next < count) {
      const index = next++
      results[index] = await task(index)
    }
  }
  await Promise.all(Array.from({ length: Math.min(width, count) }, lane))
  return results
}

export function emailOf (index: number): string {
  return `parent${index + 1}@example.org`
}

/**
 * One parent per family, registered through the real route: registering
 * without an invite makes the user the owner of a family of their own, and the
 * stored password is a real bcrypt hash.
 */
export async function registerParents (serviceUrl: string): Promise<Pair[]> {
  return inBatches(settings.families, 4, index => post<Pair>(`${serviceUrl}/api/auth/register`, {
    email: emailOf(index),
    password: settings.password,
    name: `Parent ${index + 1}`
  }, 201))
}

export function login (serviceUrl: string, email: string): Promise<Pair> {
  return post<Pair>(`${serviceUrl}/api/auth/login`, { email, password: settings.password }, 200)
}
