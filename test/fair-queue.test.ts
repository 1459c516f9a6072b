import t from 'tap'
import { FairQueue, QueueFull } from '../lib/fair-queue'

/** A job that ends when told to, recording when it started. */
function gate (log: string[], name: string) {
  let open!: () => void
  const done = new Promise<void>(resolve => { open = resolve })
  return { job: async () => { log.push(name); await done; return name }, open: () => open() }
}

const tick = () => new Promise(resolve => setImmediate(resolve))

/**
 * Queues a gated job of each name, keyed by the name's first letter, and
 * lets the latest started one end, one at a time, until all have run:
 * the results, and the order in which the jobs started.
 */
async function runInTurns (queue: FairQueue, names: string[]): Promise<{ results: string[], log: string[] }> {
  const log: string[] = []
  const gates = new Map<string, ReturnType<typeof gate>>()
  const results: Array<Promise<string>> = []
  for (const name of names) {
    const g = gate(log, name)
    gates.set(name, g)
    results.push(queue.run(name[0], g.job))
  }
  for (let i = 0; i < names.length; i += 1) {
    await tick()
    gates.get(log[log.length - 1])?.open()
    await tick()
  }
  return { results: await Promise.all(results), log }
}

t.test('keys are served in turns, one job each', async t => {
  // z holds the one slot while the others queue: a floods first, b and c come after.
  const { results, log } = await runInTurns(new FairQueue(1, 100), ['z1', 'a1', 'a2', 'a3', 'a4', 'b1', 'c1', 'b2'])
  t.same(results, ['z1', 'a1', 'a2', 'a3', 'a4', 'b1', 'c1', 'b2'])
  t.same(log, ['z1', 'a1', 'b1', 'c1', 'a2', 'b2', 'a3', 'a4'], 'a flood of a waits behind one job of each other key')
})

t.test('a key that comes while another key\'s job waits goes ahead of it: it waits only for the job running', async t => {
  const { log } = await runInTurns(new FairQueue(1, 2), ['a1', 'a2', 'b1'])
  t.same(log, ['a1', 'b1', 'a2'], 'b waits for a1, which was running, and not for a2, which was waiting')
})

t.test('at most `concurrency` jobs run at once', async t => {
  const queue = new FairQueue(2, 100)
  let running = 0
  let most = 0
  const job = async () => {
    running += 1
    most = Math.max(most, running)
    await new Promise(resolve => setTimeout(resolve, 5))
    running -= 1
  }
  await Promise.all(Array.from({ length: 12 }, (_, i) => queue.run(String(i % 3), job)))
  t.equal(most, 2)
})

t.test('a key holds at most `perKey` jobs; one more is refused at once', async t => {
  const queue = new FairQueue(1, 2)
  const log: string[] = []
  const first = gate(log, 'x1')
  const second = gate(log, 'x2')
  const one = queue.run('x', first.job)
  const two = queue.run('x', second.job)
  await t.rejects(queue.run('x', async () => 'x3'), QueueFull)
  t.equal(queue.pending('x'), 2)
  const other = queue.run('y', async () => 'y')
  first.open()
  await one
  await tick()
  second.open()
  await two
  t.equal(await other, 'y', 'another key is not refused')
  t.equal(queue.pending('x'), 0)
  t.equal(await queue.run('x', async () => 'again'), 'again', 'the key may queue again once its jobs ended')
})

t.test('a job that fails or throws frees its slot', async t => {
  const queue = new FairQueue(1, 1)
  await t.rejects(queue.run('k', async () => { throw new Error('async') }), { message: 'async' })
  await t.rejects(queue.run('k', () => { throw new Error('sync') }), { message: 'sync' })
  t.equal(await queue.run('k', async () => 7), 7)
  t.equal(queue.pending('k'), 0)
})

t.test('a key runs at most `runningPerKey` jobs at once: another key finds a free slot and waits for none of them', async t => {
  const queue = new FairQueue(2, 3, 1)
  const log: string[] = []
  const a1 = gate(log, 'a1')
  const a2 = gate(log, 'a2')
  const b1 = gate(log, 'b1')
  const first = queue.run('a', a1.job)
  const second = queue.run('a', a2.job)
  await tick()
  t.same(log, ['a1'], 'the flood runs one job although a second slot is free')
  const other = queue.run('b', b1.job)
  await tick()
  t.same(log, ['a1', 'b1'], 'another key starts at once in the slot the flood may not take')
  b1.open()
  t.equal(await other, 'b1')
  t.same(log, ['a1', 'b1'], 'the flood\'s next job waits for its running one, not for the free slot')
  a1.open()
  await first
  await tick()
  t.same(log, ['a1', 'b1', 'a2'])
  a2.open()
  t.equal(await second, 'a2')
})

t.test('a queue needs a slot and a job per key', async t => {
  t.throws(() => new FairQueue(0, 1), RangeError)
  t.throws(() => new FairQueue(1, 0), RangeError)
  t.throws(() => new FairQueue(1, 1, 0), RangeError)
})
