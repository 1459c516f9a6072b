import t from 'tap'
import path from 'node:path'
import { createSql } from '../db/client'
import { Queue } from '../db/postgres-queue'
import { testDatabase } from './helper'

t.test('the queue keeps its items in order through push, shift and remove', async t => {
  const queue = Queue(['a', 'b'])
  t.equal(queue.length, 2)
  queue.push('c')
  queue.push('d')
  t.equal(queue.shift(), 'a')
  t.equal(queue.remove('c'), 'c', 'an item in the middle')
  t.equal(queue.remove('a'), null, 'an item already shifted')
  t.equal(queue.remove('x'), null, 'an item never pushed')
  t.equal(queue.length, 2)
  t.equal(queue.shift(), 'b')
  t.equal(queue.shift(), 'd')
  t.equal(queue.length, 0)
  t.equal(queue.shift(), undefined, 'nothing to shift')
  t.equal(queue.length, 0, 'an empty shift leaves it empty')
  queue.push('e')
  t.equal(queue.remove('e'), 'e', 'the last item removed')
  t.equal(queue.length, 0)
})

t.test('a queue that is never empty does not grow', async t => {
  // The pool's busy connections: the next one is shifted, looked for in its
  // queue to be moved (it is not there any more), and pushed back.
  const queue = Queue([1, 2])
  let order = ''
  let found = 0
  let lengths = 0
  for (let turn = 0; turn < 100_000; turn++) {
    const connection = queue.shift() as number
    if (turn < 4) order += connection
    if (queue.remove(connection) !== null) found++
    queue.push(connection)
    if (queue.length !== 2) lengths++
  }
  t.equal(order, '1212', 'in turns')
  t.equal(found, 0, 'a shifted item is not found again')
  t.equal(lengths, 0, 'two items throughout')
  t.ok(queue.slots <= 2 * 64 + 2, `${queue.slots} slots after 100,000 turns`)

  const growing = Queue<number>()
  let misplaced = 0
  for (let item = 0; item < 10_000; item++) {
    growing.push(item)
    if (item % 2 === 1 && growing.shift() !== (item - 1) / 2) misplaced++
  }
  t.equal(misplaced, 0, 'the first half shifted in order')
  t.equal(growing.length, 5000)
  t.ok(growing.slots <= 10_000, `${growing.slots} slots for 5,000 items`)
  for (let item = 5000; item < 10_000; item++) if (growing.shift() !== item) t.fail(`item ${item} out of order`)
  t.equal(growing.length, 0)
})

t.test('every pool of the process uses it, and answers each query its own rows under a steady load', async t => {
  const file = path.join(path.dirname(require.resolve('postgres')), 'queue.js')
  t.equal(require.cache[file]?.exports, Queue, "postgres.js's queue is db/postgres-queue's")

  const db = await testDatabase(t, { empty: true })
  const sql = createSql(db.url, { max: 2 })
  t.teardown(() => sql.end({ timeout: 1 }))
  let wrong = 0
  let answered = 0
  await Promise.all(Array.from({ length: 32 }, async (_, client) => {
    for (let query = 0; query < 150; query++) {
      const [row] = await sql<Array<{ client: number, query: number }>>`select ${client}::int as client, ${query}::int as query`
      if (row.client !== client || row.query !== query) wrong++
      answered++
    }
  }))
  t.equal(answered, 32 * 150)
  t.equal(wrong, 0, 'no query got another query\'s answer')
})
