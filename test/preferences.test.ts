import t from 'tap'
import { build, call, register } from './helper'

const DEFAULTS = { units: 'metric', language: 'en', timeZone: 'UTC' }

t.test('preferences: metric, English and UTC by default; a PATCH changes what it names and keeps the rest', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open' } })
  const ada = await register(app)
  const me = await call(app, ada, 'GET', '/api/me')
  t.equal(me.statusCode, 200)
  t.same(me.json().preferences, DEFAULTS)

  const german = await call(app, ada, 'PATCH', '/api/me', { preferences: { language: 'de' } })
  t.equal(german.statusCode, 200, german.body)
  t.same(german.json().preferences, { ...DEFAULTS, language: 'de' }, 'the answer is the user as GET /api/me shows them')
  t.same(german.json().families, me.json().families, 'with their families')
  const imperial = await call(app, ada, 'PATCH', '/api/me', { preferences: { units: 'imperial', timeZone: 'America/New_York' } })
  t.same(imperial.json().preferences, { units: 'imperial', language: 'de', timeZone: 'America/New_York' }, 'the language is kept')
  const renamed = await call(app, ada, 'PATCH', '/api/me', { name: 'Ada L.' })
  t.equal(renamed.json().name, 'Ada L.')
  t.same(renamed.json().preferences, imperial.json().preferences, 'a PATCH without preferences keeps them')
  t.same((await call(app, ada, 'PATCH', '/api/me', { preferences: {} })).json().preferences, imperial.json().preferences, 'so does an empty one')
  t.same((await call(app, ada, 'GET', '/api/me')).json().preferences, imperial.json().preferences, 'GET reads them back')

  const other = await register(app)
  t.same((await call(app, other, 'GET', '/api/me')).json().preferences, DEFAULTS, 'another user keeps their own')
})

t.test('preferences outside the contract are a 400 that changes nothing', async t => {
  const app = await build(t, { env: { REGISTRATION: 'open' } })
  const ada = await register(app)
  await call(app, ada, 'PATCH', '/api/me', { preferences: { language: 'fr', timeZone: 'Europe/Paris' } })
  const refusals: Array<[string, unknown, string]> = [
    ['units', { units: 'furlongs' }, '/body/preferences/units'],
    ['language', { language: 'it' }, '/body/preferences/language'],
    ['language in capitals', { language: 'DE' }, '/body/preferences/language'],
    ['a time zone that does not exist', { timeZone: 'Mars/Olympus_Mons' }, '/body/preferences/timeZone'],
    ['an offset', { timeZone: '+02:00' }, '/body/preferences/timeZone'],
    ['an empty time zone', { timeZone: '' }, '/body/preferences/timeZone'],
    ['a number', { timeZone: 2 }, '/body/preferences/timeZone'],
    ['another preference', { currency: 'EUR' }, '/body/preferences'],
    ['null', null, '/body/preferences']
  ]
  for (const [what, preferences, path] of refusals) {
    const res = await call(app, ada, 'PATCH', '/api/me', { name: 'Changed', preferences })
    t.equal(res.statusCode, 400, `${what}: 400`)
    t.equal(res.json().code, 'VALIDATION_ERROR', what)
    t.ok(res.json().details.issues.some((issue: { path: string }) => issue.path.startsWith(path)), `${what}: names ${path} (${res.body})`)
  }
  const me = (await call(app, ada, 'GET', '/api/me')).json()
  t.same(me.preferences, { units: 'metric', language: 'fr', timeZone: 'Europe/Paris' }, 'nothing changed')
  t.not(me.name, 'Changed', 'not even the name beside them')
})
