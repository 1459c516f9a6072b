// What the tests of the job queue's fairness and pace share: webhooks and
// changes made through the real routes.
import { call, familyOf, type App, type Pair } from './helper'
import type { Receiver } from './webhook-receiver'

export const DAY = '2024-03-01'

/** A webhook of the family to a path of the receiver, its secret given to the receiver; answers the webhook. */
export async function webhook (app: App, owner: Pair, familyId: number, receiver: Receiver, path: string): Promise<any> {
  const res = await call(app, owner, 'POST', `/api/families/${familyId}/webhooks`, { url: `${receiver.origin}${path}` })
  if (res.statusCode !== 201) throw new Error(`webhook answered ${res.statusCode}: ${res.body}`)
  receiver.secrets.set(path, res.json().secret)
  return res.json()
}

/** `count` measurements of a child, one request each. */
export async function measurements (app: App, owner: Pair, childId: number, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const res = await call(app, owner, 'POST', `/api/children/${childId}/measurements`, { measuredAt: DAY, weightKg: 10 + i / 100 })
    if (res.statusCode !== 201) throw new Error(`write answered ${res.statusCode}: ${res.body}`)
  }
}

/** The owner's family and a second one they make. */
export async function twoFamilies (app: App, owner: Pair): Promise<[number, number]> {
  const res = await call(app, owner, 'POST', '/api/families', { name: 'Second home' })
  if (res.statusCode !== 201) throw new Error(`family answered ${res.statusCode}: ${res.body}`)
  return [familyOf(owner), res.json().id as number]
}
