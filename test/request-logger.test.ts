import t from 'tap'
import { Writable } from 'node:stream'
import pino from 'pino'
import { build, type App } from './helper'
import { lazyChildLogger } from '../lib/lazy-logger'

function routes (app: App): void {
  app.get('/api/test/logs', async request => {
    request.log.warn({ step: 1 }, 'a warning of the handler')
    request.log.info('an info line of the handler')
    const child = request.log.child({ part: 'inner' })
    child.warn('a line of a child of the request logger')
    return { level: request.log.level }
  })
}

t.test('a request logger writes its request id, at the levels that are on and no other', async t => {
  const logs: string[] = []
  const app = await build(t, { routes, logs, env: { LOG_LEVEL: 'warn' } })
  const res = await app.inject({ method: 'GET', url: '/api/test/logs', headers: { 'x-request-id': 'req-lazy-1' } })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { level: 'warn' })
  const lines = logs.map(line => JSON.parse(line)).filter(line => line.reqId === 'req-lazy-1')
  t.same(lines.map(line => line.msg), ['a warning of the handler', 'a line of a child of the request logger'], 'the warnings, not the info line')
  t.equal(lines[0].step, 1, 'with the fields logged')
  t.equal(lines[1].part, 'inner', 'a child keeps its own fields and the request id')
})

t.test('at the info level, Fastify\'s own request lines carry the request id', async t => {
  const logs: string[] = []
  const app = await build(t, { routes, logs, env: { LOG_LEVEL: 'info' } })
  const res = await app.inject({ method: 'GET', url: '/api/test/logs', headers: { 'x-request-id': 'req-lazy-2' } })
  t.equal(res.statusCode, 200)
  const messages = logs.map(line => JSON.parse(line)).filter(line => line.reqId === 'req-lazy-2').map(line => line.msg)
  t.ok(messages.includes('incoming request'), 'the incoming request')
  t.ok(messages.includes('an info line of the handler'), 'the handler\'s info line')
  t.ok(messages.includes('request completed'), 'the request completed')
})

t.test('the lazy logger makes its child only when it writes', async t => {
  const lines: string[] = []
  const stream = new Writable({ write (chunk, _encoding, done) { lines.push(String(chunk)); done() } })
  const parent = pino({ level: 'warn', redact: { paths: ['*.secret'], censor: '[redacted]' } }, stream)
  let made = 0
  const child = parent.child.bind(parent)
  parent.child = ((bindings: pino.Bindings, options?: pino.ChildLoggerOptions) => { made += 1; return child(bindings, options) }) as unknown as typeof parent.child
  const logger = lazyChildLogger(parent, { reqId: 'r1' }, {}) as unknown as pino.Logger
  logger.info('not written')
  logger.debug('not written either')
  t.equal(made, 0, 'no child for lines below the level')
  t.equal(logger.level, 'warn')
  t.same(logger.bindings(), { reqId: 'r1' }, 'its bindings before it is made')
  logger.error({ nested: { secret: 'hunter2' } }, 'written')
  t.equal(made, 1, 'the child is made at the first line written')
  logger.warn('written again')
  t.equal(made, 1, 'and once')
  const written = lines.map(line => JSON.parse(line))
  t.same(written.map(line => [line.reqId, line.msg]), [['r1', 'written'], ['r1', 'written again']])
  t.equal(written[0].nested.secret, '[redacted]', 'redacted as any line')
  logger.level = 'info'
  logger.info('now written')
  t.equal(JSON.parse(lines[lines.length - 1]).msg, 'now written', 'its level can be changed')
  t.equal(parent.level, 'warn', 'without changing its parent\'s')
  const routeLevel = lazyChildLogger(parent, { reqId: 'r2' }, { level: 'debug' }) as unknown as pino.Logger
  t.equal(made, 2, 'a route\'s own level makes the child at once')
  t.equal(routeLevel.level, 'debug')
})
