import t from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import ICAL from 'ical.js'
import { foldLine, nextDay } from '../lib/calendar'
import { build, call, familyOf, household, join, register, type App, type Pair } from './helper'

const OPEN = { REGISTRATION: 'open' }

const DEAD = { error: 'Calendar feed not found', code: 'NOT_FOUND', details: {} }

/** A feed's link, fetched as a calendar application does: no header of its own. */
function fetchFeed (app: App, url: string) {
  return app.inject({ method: 'GET', url })
}

async function createFeed (app: App, pair: Pair, familyId: number): Promise<{ id: number, url: string, createdAt: string }> {
  const res = await call(app, pair, 'POST', '/api/me/calendar-feeds', { familyId })
  if (res.statusCode !== 201) throw new Error(`create feed answered ${res.statusCode}: ${res.body}`)
  return res.json()
}

/** Dates around the database's today, as it counts them. */
async function days (app: App): Promise<Record<'birth' | 'old' | 'recent' | 'lately' | 'future' | 'farAhead', string>> {
  const [row] = await app.sql`
    select (current_date - interval '3 years')::date as birth,
           (current_date - interval '13 months')::date as old,
           (current_date - interval '11 months')::date as recent,
           (current_date - 2) as lately,
           (current_date + 30) as future,
           (current_date + 700) as "farAhead"
  `
  return row as Record<'birth' | 'old' | 'recent' | 'lately' | 'future' | 'farAhead', string>
}

async function addChild (app: App, pair: Pair, familyId: number, name: string, dateOfBirth: string): Promise<number> {
  const res = await call(app, pair, 'POST', '/api/children', { name, dateOfBirth, sex: 'female', familyId })
  if (res.statusCode !== 201) throw new Error(`child answered ${res.statusCode}: ${res.body}`)
  return res.json().id
}

async function addVisit (app: App, pair: Pair, childId: number, body: Record<string, unknown>): Promise<any> {
  const res = await call(app, pair, 'POST', '/api/visits', { childId, ...body })
  if (res.statusCode !== 201) throw new Error(`visit answered ${res.statusCode}: ${res.body}`)
  return res.json()
}

function events (text: string): any[] {
  return new ICAL.Component(ICAL.parse(text)).getAllSubcomponents('vevent')
}

/** Escaped as RFC 5545 3.3.11 says, written here apart from the service's own code. */
function escaped (text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/;/g, '\\;').replace(/,/g, '\\,').replace(/\n/g, '\\n')
}

const PROVIDER = 'Dr. Müller; Clinic, Room 3'
const NOTES = 'Fever, cough; see lab \\ results.\nSecond line; with, all \\n of them\n' +
  'Ærø café déjà vu 😀🎉 crème brûlée, naïve façade; Zürich — Łódź — Ελληνικά — 日本語のテキスト 👨‍👩‍👧 '.repeat(3).trim()

t.test('a feed shows its family\'s visits from 12 months back on, the future ones included, and nothing else', async t => {
  const app = await build(t, { env: OPEN })
  const ada = await register(app, { name: 'Ada' })
  const family = familyOf(ada)
  const day = await days(app)
  const kim = await addChild(app, ada, family, 'Kim', day.birth)
  const old = await addVisit(app, ada, kim, { date: day.old, type: 'wellness', provider: 'Too old' })
  const recent = await addVisit(app, ada, kim, { date: day.recent, type: 'sick', provider: PROVIDER, notes: NOTES })
  const lately = await addVisit(app, ada, kim, { date: day.lately, type: 'dental' })
  // Appointments ahead, made through the routes: a month ahead and nearly two years ahead.
  const future = await addVisit(app, ada, kim, { date: day.future, type: 'vision', provider: 'Eye clinic' })
  const farAhead = await addVisit(app, ada, kim, { date: day.farAhead, type: 'dental' })

  const bo = await register(app, { name: 'Bo' })
  const other = await addChild(app, bo, familyOf(bo), 'Other', day.birth)
  const foreign = await addVisit(app, bo, other, { date: day.recent, type: 'sick', notes: 'other-family-secret' })

  const created = await call(app, ada, 'POST', '/api/me/calendar-feeds', { familyId: family })
  t.equal(created.statusCode, 201)
  t.equal(created.headers['cache-control'], 'no-store')
  const feed = created.json()
  t.same(Object.keys(feed).sort(), ['createdAt', 'id', 'url'])
  t.match(feed.url, /^\/api\/calendar\/[A-Za-z0-9_-]{43}\.ics$/)

  const res = await fetchFeed(app, feed.url)
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], 'text/calendar; charset=utf-8')
  t.equal(res.headers['cache-control'], 'private, no-store')
  t.equal(res.headers['referrer-policy'], 'no-referrer')
  t.equal(res.headers['x-content-type-options'], 'nosniff')

  const calendar = new ICAL.Component(ICAL.parse(res.body))
  t.equal(calendar.getFirstPropertyValue('version'), '2.0')
  t.equal(calendar.getFirstPropertyValue('prodid'), '-//child-health//calendar feed//EN')
  t.equal(calendar.getFirstPropertyValue('calscale'), 'GREGORIAN')
  t.equal(calendar.getFirstPropertyValue('method'), 'PUBLISH')
  t.equal(calendar.getFirstPropertyValue('x-wr-calname'), "Ada's family")

  const found = events(res.body)
  t.same(found.map(event => event.getFirstPropertyValue('uid')),
    [`visit-${recent.id}@child-health`, `visit-${lately.id}@child-health`, `visit-${future.id}@child-health`, `visit-${farAhead.id}@child-health`],
    'the visits in range, by date: 13 months back is left out, 11 months back and the future are in')
  t.notOk(res.body.includes(`visit-${old.id}@`), 'not the old visit')
  t.notOk(res.body.includes(`visit-${foreign.id}@`) || res.body.includes('other-family-secret'), 'nothing of another family')

  const [first, second, third] = found
  t.equal(first.getFirstPropertyValue('summary'), 'Kim: sick visit')
  t.equal(first.getFirstPropertyValue('description'), `Provider: ${PROVIDER}\nNotes: ${NOTES}`, 'provider and notes read back exactly')
  t.equal(first.getFirstPropertyValue('sequence'), 1)
  const start = first.getFirstPropertyValue('dtstart')
  t.ok(start.isDate, 'an all-day event')
  t.equal(start.toString(), recent.date)
  t.equal(first.getFirstPropertyValue('dtend').toString(), nextDay(recent.date))
  t.equal(first.getFirstPropertyValue('transp'), 'TRANSPARENT')
  t.match(first.getFirstPropertyValue('dtstamp').toString(), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/)
  t.equal(first.getFirstPropertyValue('dtstamp').toJSDate().getTime(), Math.floor(Date.parse(recent.updatedAt) / 1000) * 1000, 'DTSTAMP is the last change, in UTC')

  t.equal(second.getFirstPropertyValue('summary'), 'Kim: dental visit')
  t.equal(second.getFirstProperty('description'), null, 'no DESCRIPTION without provider and notes')
  t.equal(second.getFirstPropertyValue('dtstart').toString(), day.lately)
  t.equal(third.getFirstPropertyValue('description'), 'Provider: Eye clinic', 'only the parts there are')
  t.equal(third.getFirstPropertyValue('dtstart').toString(), day.future)
  t.equal(found[3].getFirstPropertyValue('summary'), 'Kim: dental visit')
  t.equal(found[3].getFirstPropertyValue('dtstart').toString(), day.farAhead, 'an appointment 700 days ahead')

  // The raw text: CRLF everywhere, lines of at most 75 octets, no character cut in two.
  t.ok(res.body.startsWith('BEGIN:VCALENDAR\r\n') && res.body.endsWith('END:VCALENDAR\r\n'))
  t.notMatch(res.body.replace(/\r\n/g, ''), /[\r\n]/, 'every line ends with CRLF')
  const raw = res.rawPayload
  const lines: Buffer[] = []
  for (let at = 0; at < raw.length;) {
    const end = raw.indexOf('\r\n', at)
    lines.push(raw.subarray(at, end))
    at = end + 2
  }
  const decoder = new TextDecoder('utf-8', { fatal: true })
  t.same(lines.filter(line => line.length > 75).map(line => line.toString()), [], 'no line is longer than 75 octets')
  t.doesNotThrow(() => lines.forEach(line => decoder.decode(line)), 'each line is whole UTF-8: no character is split by a fold')
  t.ok(lines.filter(line => line[0] === 0x20).length > 5, 'the long description is folded')
  const unfolded = res.body.replace(/\r\n /g, '').split('\r\n')
  t.ok(unfolded.includes(`DESCRIPTION:${escaped(`Provider: ${PROVIDER}\nNotes: ${NOTES}`)}`), 'unfolding gives back the escaped text')
  t.ok(unfolded.includes('SUMMARY:Kim: sick visit'))

  const head = await app.inject({ method: 'HEAD', url: feed.url })
  t.equal(head.statusCode, 200)
  t.equal(head.headers['content-type'], 'text/calendar; charset=utf-8')
})

t.test('a visit keeps its UID across fetches and edits, and its SEQUENCE follows its version', async t => {
  const app = await build(t, { env: OPEN })
  const ada = await register(app)
  const family = familyOf(ada)
  const day = await days(app)
  const kim = await addChild(app, ada, family, 'Kim', day.birth)
  const visit = await addVisit(app, ada, kim, { date: day.recent, type: 'sick', notes: 'first' })
  const feed = await createFeed(app, ada, family)

  const once = await fetchFeed(app, feed.url)
  const twice = await fetchFeed(app, feed.url)
  t.equal(twice.body, once.body, 'the same feed while nothing changes')
  const [before] = events(once.body)
  t.equal(before.getFirstPropertyValue('uid'), `visit-${visit.id}@child-health`)
  t.equal(before.getFirstPropertyValue('sequence'), 1)

  const edited = await call(app, ada, 'PUT', `/api/visits/${visit.id}`, { date: day.lately, type: 'injury', provider: 'ER', notes: 'second' })
  t.equal(edited.statusCode, 200)
  const [after] = events((await fetchFeed(app, feed.url)).body)
  t.equal(after.getFirstPropertyValue('uid'), `visit-${visit.id}@child-health`, 'the same UID')
  t.equal(after.getFirstPropertyValue('sequence'), 2, 'SEQUENCE went up')
  t.equal(after.getFirstPropertyValue('summary'), 'Kim: injury visit')
  t.equal(after.getFirstPropertyValue('description'), 'Provider: ER\nNotes: second')
  t.equal(after.getFirstPropertyValue('dtstart').toString(), day.lately)

  t.equal((await call(app, ada, 'DELETE', `/api/visits/${visit.id}`)).statusCode, 204)
  const empty = await fetchFeed(app, feed.url)
  t.equal(empty.statusCode, 200, 'a family without visits in range has an empty calendar')
  t.same(events(empty.body), [])
})

t.test('a feed is dead once deleted, once its user leaves the family, once the account is disabled; every dead link answers the same 404', async t => {
  const app = await build(t, { env: OPEN })
  const admin = await register(app)
  const { owner: ada, familyId: family, vic, mo } = await household(app, { vic: 'viewer', mo: 'member' })
  const day = await days(app)
  await addVisit(app, ada, await addChild(app, ada, family, 'Kim', day.birth), { date: day.recent, type: 'sick' })

  const deleted = await createFeed(app, ada, family)
  const left = await createFeed(app, vic, family)
  const disabled = await createFeed(app, mo, family)
  const kept = await createFeed(app, ada, family)
  for (const feed of [deleted, left, disabled, kept]) t.equal((await fetchFeed(app, feed.url)).statusCode, 200)

  const answers: Array<[string, { statusCode: number, json: () => unknown }]> = []
  t.equal((await call(app, ada, 'DELETE', `/api/me/calendar-feeds/${deleted.id}`)).statusCode, 204)
  answers.push(['deleted', await fetchFeed(app, deleted.url)])
  t.equal((await call(app, ada, 'DELETE', `/api/me/calendar-feeds/${deleted.id}`)).statusCode, 404, 'a second delete finds nothing')

  t.equal((await call(app, vic, 'DELETE', `/api/families/${family}/members/${vic.user.id}`)).statusCode, 204)
  answers.push(['its user left the family', await fetchFeed(app, left.url)])

  t.equal((await call(app, admin, 'PATCH', `/api/admin/users/${mo.user.id}`, { disabled: true })).statusCode, 200)
  answers.push(['its user is disabled', await fetchFeed(app, disabled.url)])

  const token = kept.url.slice('/api/calendar/'.length, -'.ics'.length)
  const changed = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A')
  answers.push(['a wrong token', await fetchFeed(app, `/api/calendar/${changed}.ics`)])
  answers.push(['an unknown token of the right shape', await fetchFeed(app, `/api/calendar/${randomBytes(32).toString('base64url')}.ics`)])
  answers.push(['the token without .ics', await fetchFeed(app, `/api/calendar/${token}`)])
  answers.push(['the token hash', await fetchFeed(app, `/api/calendar/${createHash('sha256').update(token).digest('hex')}.ics`)])
  for (const garbage of ['/api/calendar/nothing', '/api/calendar/', '/api/calendar/a/b.ics', '/api/calendar/%00.ics', `/api/calendar/${token}.ics.ics`]) {
    answers.push([`garbage: ${garbage}`, await fetchFeed(app, garbage)])
  }
  for (const [why, res] of answers) {
    t.equal(res.statusCode, 404, `${why}: 404`)
    t.same(res.json(), DEAD, `${why}: the same body`)
  }
  t.equal((await fetchFeed(app, kept.url)).statusCode, 200, 'the other feed still works')

  // Dead for good: coming back does not bring a link back.
  await join(app, ada, family, vic, 'viewer')
  t.equal((await call(app, admin, 'PATCH', `/api/admin/users/${mo.user.id}`, { disabled: false })).statusCode, 200)
  t.equal((await fetchFeed(app, left.url)).statusCode, 404, 'rejoining does not revive the feed')
  t.equal((await fetchFeed(app, disabled.url)).statusCode, 404, 'enabling the account again does not revive the feed')
  t.same((await call(app, vic, 'GET', '/api/me/calendar-feeds')).json().data, [], 'nor lists it')

  const [{ n }] = await app.sql`select count(*)::int as n from calendar_feeds`
  t.equal(n, 1, 'only the live feed is stored')
})

t.test('the read itself refuses a feed whose user is no longer a member or is disabled', async t => {
  const app = await build(t, { env: OPEN })
  const { owner: ada, familyId: family, bo } = await household(app, { bo: 'member' })
  const left = await createFeed(app, bo, family)
  const disabled = await createFeed(app, ada, family)
  // Without the triggers that delete such feeds, the row stays: the read alone must refuse it.
  await app.sql`alter table family_members disable trigger drop_member_feeds`
  await app.sql`alter table users disable trigger drop_disabled_feeds`
  await app.sql`delete from family_members where family_id = ${family} and user_id = ${bo.user.id}`
  await app.sql`update users set disabled = true where id = ${ada.user.id}`
  t.equal((await app.sql`select count(*)::int as n from calendar_feeds`)[0].n, 2, 'the rows are still there')
  for (const feed of [left, disabled]) {
    const res = await fetchFeed(app, feed.url)
    t.equal(res.statusCode, 404)
    t.same(res.json(), DEAD)
  }
})

t.test('who may make a feed, whose feed may be deleted, and what is stored and listed', async t => {
  const app = await build(t, { env: OPEN })
  const { owner: ada, familyId: family, vic, eve } = await household(app, { vic: 'viewer', eve: null })

  const byViewer = await call(app, vic, 'POST', '/api/me/calendar-feeds', { familyId: family })
  t.equal(byViewer.statusCode, 201, 'a viewer may make a feed')
  const byStranger = await call(app, eve, 'POST', '/api/me/calendar-feeds', { familyId: family })
  t.equal(byStranger.statusCode, 403, 'a family one is not in: as any other family data')
  t.same(byStranger.json(), { error: 'Access denied', code: 'FORBIDDEN', details: {} })
  const missing = await call(app, eve, 'POST', '/api/me/calendar-feeds', { familyId: 2147483647 })
  t.equal(missing.statusCode, 404)
  t.same(missing.json(), { error: 'Family not found', code: 'NOT_FOUND', details: {} })

  const feed = byViewer.json()
  const stolen = await call(app, ada, 'DELETE', `/api/me/calendar-feeds/${feed.id}`)
  t.equal(stolen.statusCode, 404, 'another user\'s feed is not found')
  t.equal(stolen.json().code, 'NOT_FOUND')
  t.equal((await fetchFeed(app, feed.url)).statusCode, 200, 'and keeps working')

  const own = await createFeed(app, ada, family)
  const list = await call(app, vic, 'GET', '/api/me/calendar-feeds')
  t.equal(list.statusCode, 200)
  t.same(list.json(), {
    data: [{ id: feed.id, familyId: family, familyName: `${ada.user.name}'s family`, createdAt: feed.createdAt }],
    meta: { total: 1, limit: 50, offset: 0 }
  }, 'only the caller\'s feeds, without their links')
  const token = feed.url.slice('/api/calendar/'.length, -'.ics'.length)
  t.notOk(list.body.includes(token), 'no token in the list')
  t.same((await call(app, ada, 'GET', '/api/me/calendar-feeds?limit=1&offset=0')).json().data.map((f: any) => f.id), [own.id])

  const stored = await app.sql`select * from calendar_feeds order by id`
  t.equal(stored.length, 2)
  t.notOk(JSON.stringify(stored).includes(token), 'the database holds no token')
  t.equal(stored[0].token_hash, createHash('sha256').update(token).digest('hex'), 'only its SHA-256')

  const made = [own]
  while (made.length < 20) made.push(await createFeed(app, ada, family))
  const beyond = await call(app, ada, 'POST', '/api/me/calendar-feeds', { familyId: family })
  t.equal(beyond.statusCode, 409, 'at most 20 feeds a user')
  t.equal(beyond.json().code, 'CONFLICT')
  t.match(beyond.json().error, /at most 20 calendar feeds/)
  t.equal((await call(app, ada, 'GET', '/api/me/calendar-feeds?limit=1')).json().meta.total, 20)
  t.equal((await call(app, ada, 'DELETE', `/api/me/calendar-feeds/${made[5].id}`)).statusCode, 204)
  t.equal((await call(app, ada, 'POST', '/api/me/calendar-feeds', { familyId: family })).statusCode, 201, 'room again after a delete')

  for (const { id } of made.slice(6, 9)) t.equal((await call(app, ada, 'DELETE', `/api/me/calendar-feeds/${id}`)).statusCode, 204)
  const racing = await Promise.all([1, 2, 3, 4, 5].map(() => call(app, ada, 'POST', '/api/me/calendar-feeds', { familyId: family })))
  t.same(racing.map(res => res.statusCode).sort(), [201, 201, 201, 409, 409], 'creates at once do not pass the limit together')
  t.equal((await call(app, ada, 'GET', '/api/me/calendar-feeds?limit=1')).json().meta.total, 20)
})

t.test('feed requests are checked', async t => {
  const app = await build(t, { env: OPEN })
  const ada = await register(app)
  const family = familyOf(ada)
  for (const [body, path] of [
    [{}, '/body'],
    [{ familyId: 'abc' }, '/body/familyId'],
    [{ familyId: '1' }, '/body/familyId'],
    [{ familyId: 1.5 }, '/body/familyId'],
    [{ familyId: 0 }, '/body/familyId'],
    [{ familyId: 2147483648 }, '/body/familyId'],
    [{ familyId: family, url: '/api/calendar/mine.ics' }, '/body']
  ] as const) {
    const res = await call(app, ada, 'POST', '/api/me/calendar-feeds', body)
    t.equal(res.statusCode, 400, JSON.stringify(body))
    t.equal(res.json().code, 'VALIDATION_ERROR')
    t.ok(res.json().details.issues.some((issue: { path: string }) => issue.path.startsWith(path)), `${JSON.stringify(body)}: ${path}`)
  }
  t.equal((await call(app, ada, 'DELETE', '/api/me/calendar-feeds/abc')).statusCode, 400)
  t.equal((await call(app, ada, 'DELETE', '/api/me/calendar-feeds/0')).statusCode, 400)
  t.equal((await call(app, ada, 'GET', '/api/me/calendar-feeds?limit=0')).statusCode, 400)
  for (const [method, url] of [['POST', '/api/me/calendar-feeds'], ['GET', '/api/me/calendar-feeds'], ['DELETE', '/api/me/calendar-feeds/1']]) {
    const res = await app.inject({ method: method as 'GET', url, ...(method === 'POST' ? { payload: { familyId: family } } : {}) })
    t.equal(res.statusCode, 401, `${method} ${url} needs a token`)
  }
  const [{ n }] = await app.sql`select count(*)::int as n from calendar_feeds`
  t.equal(n, 0, 'nothing was made')
})

t.test('a date is the date, whatever the database\'s time zone', async t => {
  const app = await build(t, { env: OPEN, timezone: 'Pacific/Kiritimati' })
  const ada = await register(app)
  const family = familyOf(ada)
  const kim = await addChild(app, ada, family, 'Kim', '2020-02-28')
  await app.sql`insert into visits (child_id, date, type) values (${kim}, '2099-12-31', 'wellness'), (${kim}, '2096-02-28', 'dental')`
  const [leap, yearEnd] = events((await fetchFeed(app, (await createFeed(app, ada, family)).url)).body)
  t.equal(leap.getFirstPropertyValue('dtstart').toString(), '2096-02-28')
  t.equal(leap.getFirstPropertyValue('dtend').toString(), '2096-02-29')
  t.equal(yearEnd.getFirstPropertyValue('dtstart').toString(), '2099-12-31')
  t.equal(yearEnd.getFirstPropertyValue('dtend').toString(), '2100-01-01')
})

t.test('lines fold at 75 octets, never inside a character', async t => {
  for (const char of ['a', 'é', '€', '😀']) {
    const wrong: string[] = []
    for (let count = 1; count < 120; count += 1) {
      const line = `DESCRIPTION:${char.repeat(count)}`
      const folded = foldLine(line)
      const parts = folded.split('\r\n')
      if (!parts.every(part => Buffer.byteLength(part) <= 75)) wrong.push(`${count}: a line over 75 octets`)
      if (!parts.slice(1).every(part => part.startsWith(' ') && part.length > 1)) wrong.push(`${count}: a continuation without its space`)
      if (folded.replace(/\r\n /g, '') !== line) wrong.push(`${count}: does not unfold to the line`)
      if (Buffer.byteLength(line) <= 75 && folded !== line) wrong.push(`${count}: a short line was folded`)
    }
    t.same(wrong, [], `${char} repeated 1 to 119 times`)
  }
  t.equal(nextDay('2024-02-28'), '2024-02-29')
  t.equal(nextDay('2023-02-28'), '2023-03-01')
  t.equal(nextDay('2024-12-31'), '2025-01-01')
  t.equal(nextDay('0099-12-31'), '0100-01-01', 'years below 100 stay as they are')
})
