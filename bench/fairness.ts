/**
 * Whether one owner's slow receivers hold the job queue's workers: an owner
 * makes two webhooks to a receiver that answers 200 after 9 s (a success
 * before WEBHOOK_TIMEOUT) and BENCH_CHANGES changes (8). Meanwhile another
 * family's webhook gets a change every 5 s, and a reminder comes due 2 s
 * before a minute's scan. The run starts 5 s past a minute, so that scan
 * comes 55 s in, while the slow deliveries are under way. The figures: each
 * of the other family's changes from its commit to its receiver, and the
 * reminder from its due time to its ntfy topic. A run of its own, on the
 * built service and an embedded PostgreSQL. BENCH_WEBHOOK_SLOW_MS is given
 * to the service as WEBHOOK_SLOW_MS (60000: slow answers are not backed off).
 *
 *   npm run bench:fairness
 */
import { runBenchmark } from './lib/cleanup'
import { startDatabase } from './lib/database'
import { change, owner, receiver, reminderDue, until, webhook } from './lib/fairness'
import { startService } from './lib/service'

const SLOW_ANSWER_MS = 9_000
const OTHER_CHANGES = 6
const OTHER_EVERY_MS = 5_000
/** Where in the minute the run starts, and how long before the scan of the next minute the reminder comes due. */
const START_PAST_MINUTE_MS = 5_000
const DUE_BEFORE_SCAN_MS = 2_000
const WAIT_MS = 300_000

function changes (): number {
  const raw = process.env.BENCH_CHANGES ?? '8'
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 1 || value > 1000) throw new Error('BENCH_CHANGES must be a whole number from 1 to 1000')
  return value
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`
const sleepUntil = async (at: number): Promise<void> => { await new Promise(resolve => setTimeout(resolve, Math.max(0, at - Date.now()))) }

async function main (): Promise<void> {
  const count = changes()
  console.log('Starting PostgreSQL and the service ...')
  const db = await startDatabase()
  const slowMs = process.env.BENCH_WEBHOOK_SLOW_MS
  const service = await startService(db.url, db.dir, {
    env: { JOB_WORKER: 'on', WEBHOOK_ALLOW_PRIVATE: 'true', ...(slowMs === undefined ? {} : { WEBHOOK_SLOW_MS: slowMs }) }
  })
  const slow = await receiver(SLOW_ANSWER_MS)
  const fast = await receiver(0)
  const ntfy = await receiver(0)
  const adversary = await owner(service.url, 'adversary')
  await webhook(service.url, adversary, `${slow.origin}/one`)
  await webhook(service.url, adversary, `${slow.origin}/two`)
  const other = await owner(service.url, 'other')
  await webhook(service.url, other, `${fast.origin}/other`)
  const parent = await owner(service.url, 'parent')

  const minute = Math.ceil((Date.now() + 1_000) / 60_000) * 60_000
  const dueAt = minute + 60_000 - DUE_BEFORE_SCAN_MS
  await sleepUntil(minute + START_PAST_MINUTE_MS)
  console.log(`The adversary's ${count} changes to two webhooks answering after ${SLOW_ANSWER_MS / 1000} s; another family's ${OTHER_CHANGES} changes, one every ${OTHER_EVERY_MS / 1000} s; a reminder due ${seconds(dueAt - Date.now())} in ...`)
  const started = Date.now()
  await reminderDue(service.url, parent, `${ntfy.origin}/parent`, dueAt)
  for (let i = 0; i < count; i++) await change(service.url, adversary, 10 + i / 100)
  const sent: Array<{ id: number, at: number }> = []
  for (let i = 0; i < OTHER_CHANGES; i++) {
    await sleepUntil(started + 2_000 + i * OTHER_EVERY_MS)
    sent.push(await change(service.url, other, 20 + i / 100))
  }
  const arrival = (id: number): number | undefined => fast.posts.find(post => JSON.parse(post.body).id === id)?.at
  await until(() => sent.every(item => arrival(item.id) !== undefined), WAIT_MS, 'the other family\'s changes')
  const reminded = (): number | undefined => ntfy.posts.find(post => post.body.includes('next dose of'))?.at
  await until(() => reminded() !== undefined, WAIT_MS, 'the reminder')

  const latencies = sent.map(item => (arrival(item.id) as number) - item.at)
  const worst = Math.max(...latencies)
  const late = (reminded() as number) - dueAt
  console.log(`  another family's webhook, change committed → receiver got it: max ${seconds(worst)} (each: ${latencies.map(seconds).join(', ')}); target within 5 s: ${worst <= 5_000 ? 'met' : 'NOT met'}`)
  console.log(`  a due reminder, due → ntfy topic got it: ${seconds(late)} (${seconds(DUE_BEFORE_SCAN_MS)} of it until the minute's scan); target within 2 min: ${late <= 120_000 ? 'met' : 'NOT met'}`)
  console.log(`  the adversary's deliveries meanwhile: ${slow.posts.length} requests of ${2 * count} changes, in ${seconds(Date.now() - started)}`)
}

runBenchmark(main)
