import t from 'tap'
import { Readable } from 'node:stream'
import { JsonProblem, JsonReader, type JsonLimits } from '../lib/import/json-reader'

const LIMITS: JsonLimits = { maxText: 20, maxNumber: 10, maxDepth: 3, maxKeys: 4, maxValue: 60 }

/** A reader of `text`, arriving in chunks of `size` bytes. */
function reader (text: string | Buffer, size = 3, limits = LIMITS): JsonReader {
  const bytes = Buffer.from(text)
  const chunks: Buffer[] = []
  for (let at = 0; at < bytes.length; at += size) chunks.push(bytes.subarray(at, at + size))
  return new JsonReader(Readable.from(chunks), limits)
}

t.test('a document is walked key by key and item by item, values read whole', async t => {
  const json = reader('{"a": [1, -2.5e3, "x\\u00e9\\"y"], "b": {"c": null, "d": true}, "e": "skip me", "f": [[1], {"g": 2}]}')
  t.equal(await json.openObject(), true)
  t.equal(await json.key(), 'a')
  t.equal(await json.openArray(), true)
  const items: unknown[] = []
  while (await json.item()) items.push(await json.value())
  t.same(items, [1, -2500, 'xé"y'])
  t.equal(await json.key(), 'b')
  t.equal(await json.kind(), 'object')
  t.same(await json.value(), { c: null, d: true })
  t.equal(await json.key(), 'e')
  await json.skip()
  t.equal(await json.key(), 'f')
  await json.skip()
  t.equal(await json.key(), null)
  await json.end()
})

t.test('a value of another kind is left unread', async t => {
  const json = reader('[1]')
  t.equal(await json.openObject(), false)
  t.equal(await json.openArray(), true)
  t.equal(await json.item(), true)
  t.equal(await json.kind(), 'number')
})

t.test('__proto__ is a key like any other', async t => {
  const value = await reader('{"__proto__": {"polluted": true}}').value() as Record<string, unknown>
  t.same(Object.keys(value), ['__proto__'])
  t.equal(Object.getPrototypeOf(value), Object.prototype)
  t.equal(({} as Record<string, unknown>).polluted, undefined)
})

t.test('every bound holds, in values read and in values skipped', async t => {
  const cases: Array<[string, string, RegExp]> = [
    ['a long text', '"abcdefghijklmnopqrstuvwxyz"', /text longer than 20/],
    ['a long key', '{"abcdefghijklmnopqrstuvwxyz": 1}', /text longer than 20/],
    ['a long number', '12345678901234', /number longer than 10/],
    ['deep nesting', '[[[[1]]]]', /more than 3 deep/],
    ['many keys', '{"a":1,"b":2,"c":3,"d":4,"e":5}', /more than 4 keys/],
    ['a large value', '["aaaaaaaaaaaaaaaaaaa","bbbbbbbbbbbbbbbbbbb","ccccccccccccccccccc","d"]', /larger than 60 characters/]
  ]
  for (const [what, text, message] of cases) {
    await t.rejects(reader(text).value(), message, `${what}, read`)
    if (what !== 'many keys' && what !== 'a large value') await t.rejects(reader(text).skip(), message, `${what}, skipped`)
  }
  await reader('{"a":1,"b":2,"c":3,"d":4,"e":5}').skip()
  t.pass('skipping counts no keys and no size')
})

t.test('broken documents are problems of the document', async t => {
  for (const text of ['{"a": nope}', '{"a": [1, 2', '', '{"a" 1}']) {
    const error = await reader(text).value().catch((error: Error) => error) as Error
    t.ok(error instanceof JsonProblem, `${JSON.stringify(text)} is a problem of the document`)
    t.match(error.message, /^is not valid JSON \(/)
  }
  const trailing = reader('{} {}')
  await trailing.value()
  await t.rejects(trailing.end(), /is not valid JSON/)
  const after = reader('[1] ')
  await after.value()
  await after.end()
  t.pass('whitespace after the value is fine')
})

t.test('a failure of the source is thrown as it is', async t => {
  const failing = new Readable({ read () { this.destroy(new Error('the disk went away')) } })
  const json = new JsonReader(failing, LIMITS)
  await t.rejects(json.value(), { message: 'the disk went away' })
  t.notOk(await json.value().catch(error => error instanceof JsonProblem), 'not a problem of the document')
})

t.test('a large document streams through in bounded memory', async t => {
  const items = 200_000
  const source = Readable.from((function * () {
    yield '['
    for (let i = 0; i < items; i += 1000) yield Array.from({ length: 1000 }, (_, j) => `{"id":${i + j},"notes":"${'n'.repeat(10)}"}`).join(',') + (i + 1000 < items ? ',' : '')
    yield ']'
  })())
  const json = new JsonReader(source, { ...LIMITS, maxKeys: 10, maxValue: 1000 })
  t.equal(await json.openArray(), true)
  let count = 0
  let sum = 0
  while (await json.item()) {
    const item = await json.value() as { id: number }
    sum += item.id
    count += 1
  }
  await json.end()
  t.equal(count, items)
  t.equal(sum, (items - 1) * items / 2)
})
