import t from 'tap'
import { passwordWorkers } from '../io/passwords'
import { build, register } from './helper'

// bcrypt's worker threads belong to the apps of the process: they end with the last one to close.

t.test('closing the app ends the password worker threads', async t => {
  const app = await build(t)
  await register(app)
  t.ok(passwordWorkers() > 0, 'a registration hashed its password in a worker thread')
  await app.close()
  t.equal(passwordWorkers(), 0, 'no worker thread runs once the app has closed')

  const next = await build(t)
  await register(next)
  t.ok(passwordWorkers() > 0, 'an app built afterwards starts its worker threads again')
})

t.test('the threads serve every open app until the last one closes', async t => {
  const first = await build(t)
  const second = await build(t)
  await register(first)
  await first.close()
  t.ok(passwordWorkers() > 0, 'the second app still holds the threads')
  await register(second)
  await second.close()
  t.equal(passwordWorkers(), 0, 'none runs once both have closed')
})
