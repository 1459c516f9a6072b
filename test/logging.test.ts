import t from 'tap'
import { Type } from '@sinclair/typebox'
import { Secret, StrictObject } from '../lib/schemas'
import { build, type App } from './helper'

const SECRETS = ['Bearer-secret-token-123', 'hunter2-password', 'refresh-secret-456']

function routes (app: App): void {
  app.post('/api/test/login', {
    schema: { body: StrictObject({ email: Type.String(), password: Secret(), refreshToken: Type.Optional(Secret()) }) }
  }, async request => {
    request.log.info({ body: request.body }, 'a handler that logs its body')
    request.log.info({ password: 'hunter2-password', user: { refreshToken: 'refresh-secret-456' } }, 'a careless log line')
    throw new Error('failure after reading the body')
  })
}

function send (app: App) {
  return app.inject({
    method: 'POST',
    url: '/api/test/login',
    headers: { authorization: 'Bearer Bearer-secret-token-123' },
    payload: { email: 'a@example.org', password: 'hunter2-password', refreshToken: 'refresh-secret-456' }
  })
}

t.test('secrets never reach the logs, even at the most verbose level', async t => {
  const logs: string[] = []
  const app = await build(t, { routes, logs, env: { LOG_LEVEL: 'trace' } })
  t.equal((await send(app)).statusCode, 500)
  t.ok(logs.length > 3, 'something was logged')
  t.ok(logs.some(line => line.includes('a careless log line')))
  for (const secret of SECRETS) {
    t.notOk(logs.some(line => line.includes(secret)), `${secret} is not in the logs`)
  }
  t.ok(logs.some(line => line.includes('[redacted]')), 'redacted values are marked')
})

t.test('production logs errors only, without request bodies', async t => {
  const logs: string[] = []
  const app = await build(t, { routes, logs, env: { NODE_ENV: 'production', LOG_LEVEL: 'error' } })
  t.equal((await send(app)).statusCode, 500)
  t.equal((await app.inject({ method: 'GET', url: '/api/health' })).statusCode, 200)
  const levels = logs.map(line => JSON.parse(line).level)
  t.ok(levels.length >= 1, 'the failure is logged')
  t.ok(levels.every(level => level >= 50), 'only errors')
  t.notOk(logs.some(line => line.includes('a@example.org')), 'no request body')
  for (const secret of SECRETS) t.notOk(logs.some(line => line.includes(secret)))
})
