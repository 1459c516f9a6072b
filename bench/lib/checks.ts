import type { Floors } from './floors'
import type { CacheReport } from './report'
import type { World } from './scenarios'
import { measurementsPath } from './scenarios'
import { settings } from './settings'
import type { StallingFamily } from './stalls'

/** What the benchmark checks of the service and the floors before the load, and what it reads of them after. */

export async function call (url: string, init: RequestInit = {}): Promise<{ status: number, text: string }> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) })
  return { status: res.status, text: await res.text() }
}

export function expectStatus (what: string, answer: { status: number, text: string }, status: number): void {
  if (answer.status !== status) throw new Error(`${what} answered ${answer.status} instead of ${status}: ${answer.text.slice(0, 300)}`)
}

/** The owner's export of a stalling family answers 200 with its large files, read to the end. */
export async function checkStallingExport (world: World, family: StallingFamily, bytes: number): Promise<void> {
  const res = await fetch(`${world.serviceUrl}/api/families/${family.familyId}/export`, {
    headers: { authorization: `Bearer ${world.tokens.get(family.userId) as string}` },
    signal: AbortSignal.timeout(60_000)
  })
  const body = Buffer.from(await res.arrayBuffer())
  if (res.status !== 200) throw new Error(`the family export answered ${res.status} instead of 200: ${body.toString('utf8', 0, 300)}`)
  if (body.length < bytes) throw new Error(`the family export answered ${body.length} bytes, fewer than its ${bytes} bytes of files`)
}

/** The floors answer byte for byte what the service answers for the same child. */
export async function checkFloors (world: World, floors: Floors, payload: string): Promise<void> {
  const child = world.children[0]
  const headers = { authorization: `Bearer ${world.tokens.get(child.userId) as string}` }
  for (const [name, url] of [['in-memory floor', floors.memory], ['database read floor', floors.read]]) {
    const answer = await call(url + measurementsPath(child.id), { headers })
    expectStatus(`the ${name}`, answer, 200)
    if (answer.text !== payload) throw new Error(`the ${name} does not answer the service's measurements payload byte for byte`)
  }
}

export async function checkService (world: World): Promise<string> {
  const child = world.children[0]
  const headers = { authorization: `Bearer ${world.tokens.get(child.userId) as string}` }
  const list = await call(world.serviceUrl + measurementsPath(child.id), { headers })
  expectStatus('the measurements list', list, 200)
  const parsed = JSON.parse(list.text) as { data: unknown[], meta: { total: number } }
  if (parsed.data.length !== settings.listLimit || parsed.meta.total !== settings.measurementsPerChild) {
    throw new Error(`the measurements list answered ${parsed.data.length} of ${parsed.meta.total} rows, not ${settings.listLimit} of ${settings.measurementsPerChild}`)
  }
  expectStatus('reading a child', await call(`${world.serviceUrl}/api/children/${child.id}`, { headers }), 200)
  const visits = await call(`${world.serviceUrl}/api/children/${child.id}/visits?type=wellness&sort=-date`, { headers })
  expectStatus('the visits list', visits, 200)
  return list.text
}

/** The service's cache of answers after the run, from the admin statistics. */
export async function cacheReport (world: World, admin: { accessToken: string }): Promise<CacheReport | null> {
  const answer = await call(`${world.serviceUrl}/api/admin/stats`, { headers: { authorization: `Bearer ${admin.accessToken}` } })
  if (answer.status !== 200) return null
  return (JSON.parse(answer.text) as { responseCache: CacheReport }).responseCache
}

export async function growthAvailable (world: World): Promise<boolean> {
  const child = world.children[0]
  const answer = await call(`${world.serviceUrl}/api/children/${child.id}/growth`, {
    headers: { authorization: `Bearer ${world.tokens.get(child.userId) as string}` }
  })
  if (answer.status === 503) return false
  expectStatus('the growth route', answer, 200)
  return true
}
