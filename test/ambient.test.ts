import t from 'tap'
import { AsyncLocalStorage } from 'node:async_hooks'
import { inAmbientTransaction, inTransaction, storeCarried } from '../db/ambient'
import { testDatabase } from './helper'

// On Node 20 and 22 the ambient transactions' store rides on Node's async
// hooks, which make every promise of the process costlier while they are on:
// they are on only while an ambient transaction is open.

const later = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms))

/**
 * Whether work scheduled inside a store's run keeps the store once it is
 * disabled: so on Node 24, whose AsyncLocalStorage rides on async context
 * frames (no async hooks, so nothing to switch off); not on Node 20 and 22.
 */
function scheduledWorkKeepsStore (): Promise<boolean> {
  const probe = new AsyncLocalStorage<true>()
  let kept!: Promise<boolean>
  probe.run(true, () => { kept = new Promise(resolve => setTimeout(() => resolve(probe.getStore() === true), 1)) })
  probe.disable()
  return kept
}

t.test('work that an ambient transaction started and that runs after it ended carries no store', async t => {
  const { sql } = await testDatabase(t)
  let seen: { carried: boolean, inside: boolean } | null = null
  let fired!: () => void
  const done = new Promise<void>(resolve => { fired = resolve })
  await inTransaction(sql, async tx => {
    t.ok(storeCarried(), 'the store is carried inside the transaction')
    t.ok(inAmbientTransaction())
    await tx`select 1`
    setTimeout(() => { seen = { carried: storeCarried(), inside: inAmbientTransaction() }; fired() }, 20)
  })
  await done
  t.same(seen, { carried: await scheduledWorkKeepsStore(), inside: false }, 'outside any transaction, carrying the closed store only where Node keeps it')
})

t.test('one ambient transaction ending leaves another one still open in its own', async t => {
  const { sql } = await testDatabase(t)
  let release!: () => void
  const held = new Promise<void>(resolve => { release = resolve })
  const after: boolean[] = []
  const first = inTransaction(sql, async tx => {
    await held
    after.push(inAmbientTransaction(), storeCarried())
    const [{ n }] = await tx<Array<{ n: number }>>`select 1 as n`
    await later(5)
    after.push(inAmbientTransaction())
    return n
  })
  await inTransaction(sql, async tx => { await tx`select 2` })
  t.notOk(inAmbientTransaction(), 'outside both, no transaction')
  release()
  t.equal(await first, 1)
  t.same(after, [true, true, true], 'the first one still runs in its transaction after the second ended')
  await later(5)
  t.notOk(storeCarried(), 'once both have ended, nothing is carried')
})

t.test('a savepoint ending leaves its outer transaction open', async t => {
  const { sql } = await testDatabase(t)
  const seen = await inTransaction(sql, async () => {
    await inTransaction(sql, async tx => { await tx`select 1` })
    await later(5)
    return inAmbientTransaction()
  })
  t.ok(seen)
  t.notOk(storeCarried())
})
